-- 0055_change_xid.sql: campaigns and participants record the transaction that last changed
-- them, so that a process started from a snapshot re-reads only the rows changed since the
-- position the snapshot is consistent at (DB.ChangePosition: the oldest transaction still
-- running then; every transaction below it had committed or aborted). A trigger sets the
-- column on every insert and update, whatever the writer; rows written before it carry NULL
-- and are older than any position. A column without a default rewrites no row.
ALTER TABLE campaigns ADD COLUMN change_xid xid8;
ALTER TABLE participants ADD COLUMN change_xid xid8;

CREATE FUNCTION switchboard_change_xid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_xid := pg_current_xact_id();
  RETURN NEW;
END $$;

CREATE TRIGGER campaigns_change_xid BEFORE INSERT OR UPDATE ON campaigns
  FOR EACH ROW EXECUTE FUNCTION switchboard_change_xid();
CREATE TRIGGER participants_change_xid BEFORE INSERT OR UPDATE ON participants
  FOR EACH ROW EXECUTE FUNCTION switchboard_change_xid();
