/**
 * The functions a source_query may call: an allow-list, not a deny-list.
 *
 * PUBLIC may execute most of pg_catalog, and a deny-list would have to know every function that
 * reaches outside the query: set_config('role', …) switches back to the session user (the engine's
 * own, often a superuser), pg_advisory_lock outlives the transaction on a pooled connection,
 * current_setting reads server settings, dblink_* / lo_* / pg_read_* / pg_ls_* touch other servers
 * and files, pg_terminate_backend and friends act on other sessions. New PostgreSQL versions add
 * more. A function that is missing here is a refusal the LLM can work around; a function missing
 * from a deny-list is an escape. Only built-ins are reachable: unqualified or pg_catalog-qualified.
 *
 * pg_sleep is allowed on purpose: it only costs time, which statement_timeout bounds, and it is how
 * an operator (and our tests) checks that the bound holds.
 */
const NAMES = `
count sum avg min max every bool_and bool_or bit_and bit_or bit_xor string_agg array_agg
json_agg jsonb_agg json_object_agg jsonb_object_agg stddev stddev_pop stddev_samp variance var_pop var_samp
corr covar_pop covar_samp regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy
percentile_cont percentile_disc mode any_value
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
abs ceil ceiling floor round trunc sign sqrt cbrt power pow exp ln log log10 mod div gcd lcm factorial
pi degrees radians sin cos tan asin acos atan atan2 sinh cosh tanh width_bucket random scale min_scale trim_scale
greatest least
length char_length character_length octet_length bit_length lower upper initcap btrim ltrim rtrim trim
substr substring overlay position strpos starts_with left right lpad rpad repeat reverse replace translate
concat concat_ws split_part format to_char to_number to_date to_timestamp quote_literal quote_ident
regexp_replace regexp_match regexp_matches regexp_split_to_array regexp_split_to_table regexp_count regexp_like
regexp_substr regexp_instr string_to_array array_to_string string_to_table md5 ascii chr unistr normalize
like_escape similar_to_escape similar_escape
date_trunc date_part extract date_bin age make_date make_time make_timestamp make_timestamptz make_interval
justify_days justify_hours justify_interval isfinite now timezone overlaps
current_date current_time current_timestamp localtime localtimestamp clock_timestamp statement_timestamp transaction_timestamp
to_json to_jsonb row_to_json array_to_json json_build_object jsonb_build_object json_build_array jsonb_build_array
json_object jsonb_object json_array_length jsonb_array_length json_extract_path jsonb_extract_path
json_extract_path_text jsonb_extract_path_text json_array_elements jsonb_array_elements json_array_elements_text
jsonb_array_elements_text json_each jsonb_each json_each_text jsonb_each_text json_object_keys jsonb_object_keys
json_typeof jsonb_typeof jsonb_pretty jsonb_strip_nulls json_strip_nulls jsonb_set jsonb_insert jsonb_path_query
jsonb_path_query_array jsonb_path_query_first jsonb_path_exists jsonb_path_match
array_length array_lower array_upper array_ndims array_dims array_position array_positions array_append
array_prepend array_cat array_remove array_replace cardinality unnest generate_series generate_subscripts
num_nulls num_nonnulls nullif coalesce
pg_sleep
`;

export const ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set(NAMES.split(/\s+/).filter(Boolean));

/** Table sampling methods built into PostgreSQL; extensions add others (tsm_system_time can stall). */
export const ALLOWED_SAMPLE_METHODS: ReadonlySet<string> = new Set(['bernoulli', 'system']);
