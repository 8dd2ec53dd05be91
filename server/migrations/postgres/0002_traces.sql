-- Verifications: traces uploaded after a run, attached to a saved plan.
-- The upload is kept gzip-compressed; its parsed report is kept beside it.
CREATE TABLE traces (
    seq           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE CHECK (length(id) = 12),
    plan_id       TEXT    NOT NULL REFERENCES plans(id),
    created_at_ms BIGINT  NOT NULL,
    filename      TEXT    NOT NULL DEFAULT '',
    format        TEXT    NOT NULL,
    raw_bytes     BIGINT  NOT NULL,
    body_gz       BYTEA   NOT NULL,
    report_json   TEXT    NOT NULL
);
CREATE INDEX traces_by_plan ON traces (plan_id, seq);

CREATE TRIGGER traces_no_update BEFORE UPDATE ON traces
    FOR EACH ROW EXECUTE FUNCTION plans_immutable();
