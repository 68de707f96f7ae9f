-- 0012: the waiting room of DESIGN.md 18, per voucher: its title (UTF-8, at most 128
-- characters, no control characters: checked by the admin, rendered as text only by the
-- page), queue_mode (0 off, 1 on; fixed at create), queue_open_s (the pre-queue opens
-- this long before begin), queue_ttl_s (how long an admission is valid), queue_overbook_pct
-- (>= 100) and queue_rate (most admissions per second, 0 = limited by the stock alone).
-- Existing vouchers get "no waiting room". The index (voucher_id, status, pay_deadline)
-- serves the room's once-a-second read of the PAID count and the latest pay deadline.
-- Every statement is idempotent on its own (a runner killed half-way re-runs the file).
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS title VARCHAR(128) NOT NULL DEFAULT '' COMMENT 'DESIGN.md 18: shown as text only';
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS queue_mode TINYINT NOT NULL DEFAULT 0 COMMENT '0 off, 1 on (DESIGN.md 18), fixed at create';
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS queue_open_s INT NOT NULL DEFAULT 600 COMMENT 'the pre-queue opens this long before begin';
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS queue_ttl_s INT NOT NULL DEFAULT 60 COMMENT 'an admission is valid this long';
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS queue_overbook_pct INT NOT NULL DEFAULT 125 COMMENT '>= 100';
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS queue_rate INT NOT NULL DEFAULT 0 COMMENT 'most admissions per second, 0 = the stock alone';
ALTER TABLE tb_seckill_voucher ADD CONSTRAINT IF NOT EXISTS ck_voucher_queue CHECK (queue_mode IN (0, 1) AND queue_open_s >= 0 AND queue_ttl_s >= 1 AND queue_overbook_pct >= 100 AND queue_rate >= 0);
ALTER TABLE tb_voucher_order ADD INDEX IF NOT EXISTS idx_voucher_status_deadline (voucher_id, status, pay_deadline);
