-- Approving a change a grant in force already allows for the bottle keeps that grant (its
-- end becomes the later of the two) instead of writing a second one: the decided proposal
-- names the grant it kept here. Documented in docs/SCHEMA.md.

ALTER TABLE proposals ADD COLUMN kept_grant_id TEXT REFERENCES grants (id);
