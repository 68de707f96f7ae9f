-- 0005: drop tb_seckill_voucher.stock (DESIGN.md 6, 14): the ledger is tb_seckill_stock,
-- one row per (voucher, bucket); a voucher's stock is the sum of its bucket rows and no code
-- reads or writes the v3 column any more. The CHECK that names the column goes first.
-- Every statement is idempotent on its own (a runner killed half-way re-runs the file).
ALTER TABLE tb_seckill_voucher DROP CONSTRAINT IF EXISTS ck_voucher_stock;
ALTER TABLE tb_seckill_voucher DROP COLUMN IF EXISTS stock;
