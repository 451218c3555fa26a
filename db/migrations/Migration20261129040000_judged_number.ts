import { Migration } from '@mikro-orm/migrations';

/**
 * `judged_number(actual)`: a regression outcome's `actual` as the float8 the performance route scores,
 * or null when it is no finite number within ±1e150 (the bound outcomes are accepted within). Outcomes
 * stored before the rule was enforced hold values such as "0x10" or "1e400", which a plain cast refused,
 * so `GET /v1/models/{id}/performance` (and the daily model.stale check) answered 503 for such a model
 * for good; they are now passed over as pairs that cannot be judged.
 */
export class Migration20261129040000_judged_number extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create function judged_number(actual jsonb) returns float8 language plpgsql immutable parallel safe as $$
declare
  value numeric;
begin
  if jsonb_typeof(actual) = 'number' then
    value := actual::numeric;
  elsif jsonb_typeof(actual) = 'string' and (actual #>> '{}') ~ '^\\s*[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?\\s*$' then
    value := (actual #>> '{}')::numeric;
  else
    return null;
  end if;
  if abs(value) > 1e150 then
    return null;
  end if;
  -- below float8's smallest magnitude a value reads as 0 (the cast itself refuses it)
  if abs(value) < 1e-300 then
    return 0;
  end if;
  return value::float8;
exception when others then
  return null;
end $$;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop function if exists judged_number(jsonb);`);
  }
}
