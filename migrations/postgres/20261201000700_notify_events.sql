-- Every transaction that appends to the trail notifies `supervise_events` (payload empty):
-- PostgreSQL delivers it at COMMIT (never for a rollback), once per transaction, to every
-- server's listener, which then reads the change feed. A hint, never the data: a server
-- whose listener is down reads the feed at its interval instead. Documented in
-- docs/SCHEMA.md.

CREATE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('supervise_events', '');
    RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
