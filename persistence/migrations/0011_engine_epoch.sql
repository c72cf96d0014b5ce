-- Advanced by every transaction that notifies a campaign change (NotifyCampaigns). The
-- engine's periodic safety rebuild compares it with the value it last loaded at and skips
-- the rebuild when nothing changed. A sequence takes no row lock and is never rolled back:
-- a rolled-back write only costs one needless rebuild.
CREATE SEQUENCE engine_epoch_seq;
