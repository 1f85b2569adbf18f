-- Each bottle's number of undecided proposals, kept by triggers on every path that files a
-- proposal or moves one out of 'pending' (decide, withdraw, expire, bottle removal), so the
-- per-bottle pending cap is one primary-key read however many proposals wait.
-- Documented in docs/SCHEMA.md.

ALTER TABLE bottles ADD COLUMN pending_count INTEGER NOT NULL DEFAULT 0 CHECK (pending_count >= 0);

UPDATE bottles SET pending_count =
    (SELECT COUNT(*) FROM proposals p WHERE p.bottle_id = bottles.id AND p.status = 'pending');

CREATE TRIGGER proposals_count_filed AFTER INSERT ON proposals
WHEN NEW.status = 'pending'
BEGIN
    UPDATE bottles SET pending_count = pending_count + 1 WHERE id = NEW.bottle_id;
END;

CREATE TRIGGER proposals_count_left AFTER UPDATE OF status ON proposals
WHEN OLD.status = 'pending' AND NEW.status <> 'pending'
BEGIN
    UPDATE bottles SET pending_count = pending_count - 1 WHERE id = OLD.bottle_id;
END;

CREATE TRIGGER proposals_count_returned AFTER UPDATE OF status ON proposals
WHEN OLD.status <> 'pending' AND NEW.status = 'pending'
BEGIN
    UPDATE bottles SET pending_count = pending_count + 1 WHERE id = NEW.bottle_id;
END;

-- A bottle's undecided proposals by expiry: at the cap, propose expires the ones whose time
-- is up through this index (cost proportional to what expires, not to what waits).
CREATE INDEX proposals_pending_expiry ON proposals (bottle_id, expires_at)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
