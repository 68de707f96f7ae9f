-- 0006: evidence for the early drain of DESIGN.md 12 (draining -> db, parts b and c)
-- and the role of each worker-id lease (DESIGN.md 2, 6).
-- tb_drain_ack: a front writes (its lease holder, V, epoch) once it has read that draining
-- epoch of V and none of its purchases of V can still reach Kafka. Append-only: one row per
-- front and draining period, never updated or deleted by the binaries.
-- tb_worker_lease.role: who holds (or last held) the id. The early move needs an ack from the
-- holder of every row with role 'front' whose lease_until >= since - D (D = the request
-- deadline, 2 x delivery timeout + 1 s), and a front's id is leased again only once
-- lease_until + D < NOW(3). Rows leased before this migration count as fronts (the safe side).
-- Every statement is idempotent on its own (a runner killed half-way re-runs the file).
CREATE TABLE IF NOT EXISTS tb_drain_ack (
  holder       VARCHAR(128) NOT NULL COMMENT 'tb_worker_lease.holder of the front (host:pid:start_ms)',
  voucher_id   BIGINT       NOT NULL,
  epoch        BIGINT       NOT NULL COMMENT 'tb_seckill_switch.epoch of the draining period acknowledged',
  acked_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  PRIMARY KEY (holder, voucher_id, epoch),
  KEY idx_voucher_epoch (voucher_id, epoch)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

ALTER TABLE tb_worker_lease ADD COLUMN IF NOT EXISTS role VARCHAR(16) NOT NULL DEFAULT 'front' COMMENT 'front, consumer, admin, reconciler: the holder''s binary' AFTER holder;
ALTER TABLE tb_worker_lease ADD INDEX IF NOT EXISTS idx_role_until (role, lease_until);
