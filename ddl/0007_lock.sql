-- 0007: nothing relies on a node-local lock (DESIGN.md 16 "One writer is a performance
-- preference; correctness never depends on it"). GET_LOCK, FOR SHARE and FOR UPDATE are
-- node-local on Galera, which certifies write sets only, so:
-- tb_lock: every advisory lock (migrate, the voucher/rebuild lock, the reconciler run lock)
-- is a row, taken and renewed by conditional writes judged by NOW(3) like the worker lease
-- (common/db/dblock.c). A row is held while until >= NOW(3); "nobody holds the lock" means
-- no live row. holder is 'host:pid:start_ms' of the taker, unique per lock object; a
-- release sets until in the past and keeps the holder (the binaries never DELETE). seq is
-- bumped by every take and renewal, so a renewal always changes the row (its affected-row
-- count says whether the row is still ours). seckill-admin db migrate creates this table
-- itself before taking its own lock (the same statement, so running it here again is a
-- no-op).
-- tb_seckill_stock.switch_epoch: the db -> rebuilding transition sets it on every bucket row
-- of the voucher in the switch row's transaction, so a concurrent DB-only sale (which
-- updates a bucket row) waits for it or fails certification (1213) and retries into state
-- rebuilding. tb_seckill_stock.version: the sold_out clamp's second transaction bumps it
-- instead of only reading the row FOR SHARE.
-- Every statement is idempotent on its own (a runner killed half-way re-runs the file).
CREATE TABLE IF NOT EXISTS tb_lock (
  name         VARCHAR(191) NOT NULL PRIMARY KEY COMMENT 'seckill:<what>:<database>[:<prefix>[:<id>]]',
  holder       VARCHAR(128) NOT NULL DEFAULT '' COMMENT 'host:pid:start_ms of the holder, or of the last one',
  until        DATETIME(3)  NOT NULL COMMENT 'DB time (UTC) the lock ends unless renewed',
  seq          BIGINT       NOT NULL DEFAULT 0 COMMENT 'bumped by every take and renewal',
  taken_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3) COMMENT 'DB time of the last take'
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

ALTER TABLE tb_seckill_stock ADD COLUMN IF NOT EXISTS switch_epoch BIGINT NOT NULL DEFAULT 0 COMMENT 'tb_seckill_switch.epoch of the last db -> rebuilding move (DESIGN.md 16)';
ALTER TABLE tb_seckill_stock ADD COLUMN IF NOT EXISTS version BIGINT NOT NULL DEFAULT 0 COMMENT 'bumped by the sold_out clamp (DESIGN.md 16)';
