-- Verifications: traces uploaded after a run, attached to a saved plan.
-- The upload is kept gzip-compressed; its parsed report is kept beside it.
CREATE TABLE traces (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT    NOT NULL UNIQUE CHECK (length(id) = 12),
    plan_id       TEXT    NOT NULL REFERENCES plans(id),
    created_at_ms INTEGER NOT NULL,
    filename      TEXT    NOT NULL DEFAULT '',
    format        TEXT    NOT NULL,
    raw_bytes     INTEGER NOT NULL,
    body_gz       BLOB    NOT NULL,
    report_json   TEXT    NOT NULL
);
CREATE INDEX traces_by_plan ON traces (plan_id, seq);

CREATE TRIGGER traces_no_update BEFORE UPDATE ON traces
BEGIN
    SELECT RAISE(ABORT, 'uploaded traces are immutable');
END;
