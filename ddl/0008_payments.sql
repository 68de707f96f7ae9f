-- 0008: payments (DESIGN.md 6, 13, 15). A voucher has a price (minor units, >= 0) and
-- an ISO 4217 currency, fixed at creation; every order copies them at creation
-- (amount_minor, currency). tb_payment records every signed payment callback in the
-- transaction that decides it: result 1 applied | 2 refund_due, reason late | closed |
-- cancelled | amount | currency | duplicate | failed; refunded_at / refund_ref are set by
-- `seckill-admin payment refunded` once the merchant refunded it through the provider.
-- Rows from before this migration: price 0 in the default currency.
-- Every statement is idempotent on its own (a runner killed half-way re-runs the file).
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS price_minor BIGINT NOT NULL DEFAULT 0 COMMENT 'price in minor units (>= 0), fixed at creation';
ALTER TABLE tb_seckill_voucher ADD COLUMN IF NOT EXISTS currency CHAR(3) NOT NULL DEFAULT 'CNY' COMMENT 'ISO 4217, fixed at creation';
ALTER TABLE tb_voucher_order ADD COLUMN IF NOT EXISTS amount_minor BIGINT NOT NULL DEFAULT 0 COMMENT 'the voucher price_minor at creation';
ALTER TABLE tb_voucher_order ADD COLUMN IF NOT EXISTS currency CHAR(3) NOT NULL DEFAULT 'CNY' COMMENT 'the voucher currency at creation';

CREATE TABLE IF NOT EXISTS tb_payment (
  provider_txn_id VARCHAR(128) NOT NULL COMMENT 'the provider''s transaction id (idempotency key)',
  order_id        BIGINT       NOT NULL,
  amount_minor    BIGINT       NOT NULL,
  currency        CHAR(3)      NOT NULL,
  received_at     DATETIME(3)  NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
  result          TINYINT      NOT NULL COMMENT '1 applied, 2 refund_due',
  reason          VARCHAR(16)  NULL COMMENT 'late, closed, cancelled, amount, currency, duplicate, failed (refund_due only)',
  refunded_at     DATETIME(3)  NULL,
  refund_ref      VARCHAR(128) NULL,
  PRIMARY KEY (provider_txn_id),
  KEY idx_order (order_id),
  KEY idx_result_refunded (result, refunded_at, received_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- DESIGN.md 6: the payment callback finds an order's outcome by order_id (no order row yet:
-- FAILED -> refund_due, none -> 503).
ALTER TABLE tb_seckill_outcome ADD INDEX IF NOT EXISTS idx_order (order_id);
