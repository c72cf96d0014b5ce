-- 0041_sightings_publisher_reference.sql: no per-row foreign-key check on the device
-- sightings (docs/performance.md, "The shared-device sightings' foreign key").
--
-- The shared-device rule writes a row for every new (publisher, device, user) a GET
-- /campaigns sees, in batches every 200 ms: thousands a second when many participants are
-- new. Each row's foreign key to publishers was checked row by row, locking the publisher's
-- row (FOR KEY SHARE), as the session's were before 0012: about a sixth of the insert's
-- time. The insert keeps only rows whose publisher exists, and nothing deletes publishers.
ALTER TABLE quality_device_sightings
  DROP CONSTRAINT IF EXISTS quality_device_sightings_publisher_id_fkey;
