-- Saved plans: immutable rows. `seq` orders them (newest first on the team page).
CREATE TABLE plans (
    seq            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id             TEXT    NOT NULL UNIQUE CHECK (length(id) = 12),
    title          TEXT    NOT NULL,
    notes          TEXT    NOT NULL DEFAULT '',
    author         TEXT    NOT NULL DEFAULT '',
    created_at_ms  BIGINT  NOT NULL,
    forked_from    TEXT,
    schema_version INTEGER NOT NULL,
    model_version  INTEGER NOT NULL,
    model          TEXT    NOT NULL,
    gpu            TEXT    NOT NULL,
    num_gpus       INTEGER NOT NULL,
    plan_json      TEXT    NOT NULL
);

-- A link handed out must keep showing what it showed: no updates, no deletes.
CREATE FUNCTION plans_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'saved plans are immutable';
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER plans_no_update_delete BEFORE UPDATE OR DELETE ON plans
    FOR EACH ROW EXECUTE FUNCTION plans_immutable();
