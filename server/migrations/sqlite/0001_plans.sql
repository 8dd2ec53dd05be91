-- Saved plans: immutable rows. `seq` orders them (newest first on the team page).
CREATE TABLE plans (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    id             TEXT    NOT NULL UNIQUE CHECK (length(id) = 12),
    title          TEXT    NOT NULL,
    notes          TEXT    NOT NULL DEFAULT '',
    author         TEXT    NOT NULL DEFAULT '',
    created_at_ms  INTEGER NOT NULL,
    forked_from    TEXT,
    schema_version INTEGER NOT NULL,
    model_version  INTEGER NOT NULL,
    model          TEXT    NOT NULL,
    gpu            TEXT    NOT NULL,
    num_gpus       INTEGER NOT NULL,
    plan_json      TEXT    NOT NULL
);

-- A link handed out must keep showing what it showed: no updates, no deletes.
CREATE TRIGGER plans_no_update BEFORE UPDATE ON plans
BEGIN
    SELECT RAISE(ABORT, 'saved plans are immutable');
END;
CREATE TRIGGER plans_no_delete BEFORE DELETE ON plans
BEGIN
    SELECT RAISE(ABORT, 'saved plans are immutable');
END;
