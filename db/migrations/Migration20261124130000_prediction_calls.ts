import { Migration } from '@mikro-orm/migrations';

const BASE62 = `'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'::text`;

/**
 * Scored rows are stored one row per call (`prediction_calls`) instead of one row per scored row: a
 * 1,000-row call wrote 1,000 table rows and 3,000 index entries and made PostgreSQL split one JSON
 * document into records, about 13 ms of the call; as one row it costs about 6 (bench/RESULTS.md, issue
 * 10's seventh session). A row's request_id is its call's id (`req_` and 18 random base62 characters)
 * followed by its position in 4 base62 digits (services/ids.ts, newIdRun); `first_index` is the
 * position of the call's first row (0, except for rows carried over from the per-row table, which keep
 * their ids). Features and outputs are json (the text as written), not jsonb: they are written on every
 * paid call and read rarely.
 *
 * `predictions` becomes a view with the per-row shape of before, for reading a few calls' rows and for
 * operators; services that look rows up by request_id go to `prediction_calls` by the id's first 22
 * characters (its primary key).
 */
export class Migration20261124130000_prediction_calls extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create function prediction_position(request_id text) returns int language sql immutable parallel safe as $$
  select (strpos(a, substr(request_id, 23, 1)) - 1) * 238328 + (strpos(a, substr(request_id, 24, 1)) - 1) * 3844
       + (strpos(a, substr(request_id, 25, 1)) - 1) * 62 + (strpos(a, substr(request_id, 26, 1)) - 1)
    from (select ${BASE62} as a) s
$$;`);
    this.addSql(`create function prediction_position_text(pos int) returns text language sql immutable parallel safe as $$
  select substr(a, pos / 238328 % 62 + 1, 1) || substr(a, pos / 3844 % 62 + 1, 1) || substr(a, pos / 62 % 62 + 1, 1) || substr(a, pos % 62 + 1, 1)
    from (select ${BASE62} as a) s
$$;`);
    this.addSql(`create table "prediction_calls" ("id" varchar(40) not null, "model_id" varchar(40) not null, "workspace_id" varchar(40) not null, "version_number" int not null, "http_request_id" varchar(40) not null, "first_index" int not null default 0, "row_count" int not null, "features" json not null, "output" json not null, "created_at" timestamptz not null default now(), constraint "prediction_calls_pkey" primary key ("id"), constraint "prediction_calls_row_count_check" check ("row_count" > 0));`);
    this.addSql(`create index "prediction_calls_model_id_created_at_index" on "prediction_calls" ("model_id", "created_at");`);
    // the retention prune
    this.addSql(`create index "prediction_calls_created_at_index" on "prediction_calls" ("created_at");`);
    this.addSql(`insert into "prediction_calls" ("id", "model_id", "workspace_id", "version_number", "http_request_id", "first_index", "row_count", "features", "output", "created_at")
  select left(id, 22), model_id, workspace_id, version_number, http_request_id, prediction_position(id), 1, json_build_array(features), json_build_array(output), created_at
    from "predictions";`);
    this.addSql(`drop table "predictions";`);
    this.addSql(`create view "predictions" as
  select c.id || prediction_position_text(c.first_index + e.n::int - 1) as id, c.id as call_id, c.model_id, c.workspace_id, c.version_number,
         c.http_request_id, e.features, e.output, c.created_at
    from "prediction_calls" c
   cross join lateral rows from (json_array_elements(c.features), json_array_elements(c.output)) with ordinality as e(features, output, n);`);
  }

  override async down(): Promise<void> {
    this.addSql(`create table "predictions_rows" as select id, model_id, workspace_id, version_number, http_request_id, features::jsonb as features, output::jsonb as output, created_at from "predictions";`);
    this.addSql(`drop view "predictions";`);
    this.addSql(`drop table "prediction_calls";`);
    this.addSql(`alter table "predictions_rows" rename to "predictions";`);
    this.addSql(`alter table "predictions" add constraint "predictions_pkey" primary key ("id"), alter column "model_id" set not null, alter column "workspace_id" set not null, alter column "version_number" set not null, alter column "http_request_id" set not null, alter column "features" set not null, alter column "output" set not null, alter column "created_at" set not null, alter column "created_at" set default now();`);
    this.addSql(`create index "predictions_model_id_created_at_index" on "predictions" ("model_id", "created_at");`);
    this.addSql(`create index "predictions_created_at_index" on "predictions" ("created_at");`);
    this.addSql(`drop function prediction_position_text(int);`);
    this.addSql(`drop function prediction_position(text);`);
  }
}
