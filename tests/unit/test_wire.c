/* wire.c: JSON bodies are taken whole and strictly — names given twice,
 * NUL bytes, wrong types and out-of-range integers are refused by name,
 * maps of strings are bounded. */
#include <criterion/criterion.h>
#include <string.h>

#include <abox/abox.h>

#include "wire.h"

static json_object *parse(const char *s, char *why)
{
	return json_parse_object(s, strlen(s), why, 256);
}

/* A body and what the refusal of it says (NULL: only that it is refused). */
struct refusal {
	const char *json, *words;
};

static void refused(const char *json, const char *words)
{
	char why[256] = "";
	cr_assert_null(parse(json, why), "accepted: %s", json);
	if (words)
		cr_assert(strstr(why, words), "%s: %s", json, why);
}

static void accepted(const char *json)
{
	char why[256];
	json_object *o = parse(json, why);
	cr_assert_not_null(o, "%s: %s", json, why);
	json_object_put(o);
}

Test(wire, duplicate_names_are_refused_with_their_path)
{
	refused("{\"timeout\": 1, \"timeout\": 2}", "'timeout' is given twice");
	refused("{\"a\": {\"b\": [1, {\"c\": 1, \"c\": 1}]}}", "'a.b[1].c' is given twice");
	refused("{\"m\": {\"x\": \"1\", \"\\u0078\": \"2\"}}", "'m.x' is given twice");
	/* the same name in two objects is fine */
	accepted("{\"a\": {\"x\": 1}, \"b\": {\"x\": 1}, \"x\": [{\"x\": 1}, {\"x\": 2}]}");
}

Test(wire, nul_bytes_are_refused)
{
	refused("{\"templateID\": \"base\\u0000x\"}", "'templateID' holds a NUL");
	refused("{\"a\": [\"ok\", \"\\u0000\"]}", "'a[1]' holds a NUL");
	refused("{\"k\\u0000\": 1}", "NUL");
	char why[256];
	const char raw[] = "{\"k\": \"a\0b\"}";
	cr_assert_null(json_parse_object(raw, sizeof(raw) - 1, why, sizeof(why)));
	cr_assert(strstr(why, "NUL byte (at offset 8)"), "%s", why);
	/* escapes that are not NUL stay: a surrogate pair, \\u0001 */
	accepted("{\"e\": \"\\ud83d\\ude00 \\u0001 \\\\u0000\"}");
}

Test(wire, not_json_or_trailing_bytes)
{
	refused("{'a': 1}", NULL);
	refused("[1]", NULL);
	refused("{} {}", NULL);
	accepted("{\"a\": 1}\n");
}

Test(wire, strict_readers_name_the_field)
{
	char why[256];
	json_object *o = parse("{\"s\": 5, \"i\": \"60\", \"d\": 1.5, \"big\": 99999999999999999999, \"neg\": -5, "
			       "\"b\": 1, \"n\": null, \"ok\": 7, \"t\": true}",
			       why);
	cr_assert_not_null(o, "%s", why);
	const char *s = NULL;
	int64_t i = 0;
	bool b = false;
	cr_assert_eq(json_get_string(o, "s", &s, why, sizeof(why)), -1);
	cr_assert(strstr(why, "s must be a string"), "%s", why);
	cr_assert_eq(json_get_int(o, "i", 0, 100, &i, why, sizeof(why)), -1);
	cr_assert(strstr(why, "i must be an integer of 0-100"), "%s", why);
	cr_assert_eq(json_get_int(o, "d", 0, 100, &i, why, sizeof(why)), -1);
	cr_assert_eq(json_get_int(o, "big", 0, INT64_MAX - 1, &i, why, sizeof(why)), -1);
	cr_assert_eq(json_get_int(o, "neg", 0, 100, &i, why, sizeof(why)), -1);
	cr_assert_eq(json_get_bool(o, "b", &b, why, sizeof(why)), -1);
	cr_assert(strstr(why, "b must be true or false"), "%s", why);
	cr_assert_eq(json_get_int(o, "n", 0, 100, &i, why, sizeof(why)), 0, "null is absent");
	cr_assert_eq(json_get_int(o, "absent", 0, 100, &i, why, sizeof(why)), 0);
	cr_assert_eq(json_get_int(o, "ok", 0, 100, &i, why, sizeof(why)), 1);
	cr_assert_eq(i, 7);
	cr_assert_eq(json_get_bool(o, "t", &b, why, sizeof(why)), 1);
	cr_assert(b);
	json_object_put(o);
}

Test(wire, string_maps_are_bounded)
{
	char why[256];
	const struct wire_map_bounds mb = { .what = "metadata", .reserved = "_abox", .entries = 2, .name_bytes = 4,
					    .value_bytes = 4, .total_bytes = 10 };
	static const struct refusal bad[] = {
		{ "{\"metadata\": \"x\"}", "metadata must be an object" },
		{ "{\"metadata\": {\"a\": 1}}", "metadata.a must be a string" },
		{ "{\"metadata\": {\"a\": \"1\", \"b\": \"2\", \"c\": \"3\"}}", "3 entries, at most 2" },
		{ "{\"metadata\": {\"abcde\": \"1\"}}", "a name of 5 bytes, at most 4" },
		{ "{\"metadata\": {\"a\": \"12345\"}}", "a value of 5 bytes, at most 4" },
		{ "{\"metadata\": {\"abcd\": \"1234\", \"e\": \"123\"}}", "more than 10 bytes" },
		{ "{\"metadata\": {\"_abox1\": \"1\"}}", "reserved" },
		{ "{\"metadata\": {\"a=b\": \"1\"}}", "holds '='" },
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		json_object *o = parse(bad[k].json, why);
		cr_assert_not_null(o, "%s: %s", bad[k].json, why);
		why[0] = '\0';
		cr_assert_null(json_string_map(o, &mb, 0, why, sizeof(why)), "%s", bad[k].json);
		cr_assert(strstr(why, bad[k].words), "%s: %s", bad[k].json, why);
		json_object_put(o);
	}
	json_object *o = parse("{\"metadata\": {\"a\": \"1234\", \"b\": \"\"}}", why);
	char **v = json_string_map(o, &mb, 1, why, sizeof(why));
	cr_assert_not_null(v, "%s", why);
	cr_assert_str_eq(v[0], "a=1234");
	cr_assert_str_eq(v[1], "b=");
	cr_assert_null(v[2]);
	cr_assert_null(v[3], "room for one more");
	abox_strv_free(v);
	json_object_put(o);
}
