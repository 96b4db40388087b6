/* doctor.c — `sandlot doctor [--repair] [--format json]`: what is broken or orphaned in
 * the state and store (runtime/doctor.c), one line each; exit 0 clean, 1 problems left,
 * 2 could not check. It opens the runtime itself, so that failing to is a 2. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "doctor.h"

#define DOCTOR_CLEAN	  0
#define DOCTOR_PROBLEMS	  1
#define DOCTOR_CANNOT_CHECK 2

static void print_text(void *arg, const sl_finding *f)
{
	bool repair = *(bool *)arg;
	printf("%-8s  %s: %s", f->kind, f->what, f->problem);
	if (repair)
		printf(f->repaired ? " [repaired]" : " [NOT repaired: %s]", f->repair_error);
	putchar('\n');
}

static void add_json(void *arg, const sl_finding *f)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kind", f->kind);
	cJSON_AddStringToObject(o, "what", f->what);
	cJSON_AddStringToObject(o, "problem", f->problem);
	cJSON_AddBoolToObject(o, "repaired", f->repaired);
	if (f->repair_error[0])
		cJSON_AddStringToObject(o, "repairError", f->repair_error);
	cJSON_AddItemToArray(arg, o);
}

static int cannot_check(const char *why)
{
	fprintf(stderr, "sandlot: doctor: could not check: %s\n", why);
	return DOCTOR_CANNOT_CHECK;
}

int cmd_doctor(int argc, char **argv)
{
	bool repair = false, json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--repair"))
			repair = true;
		else if ((!strcmp(argv[i], "--format") && i + 1 < argc &&
			  !strcmp(argv[i + 1], "json") && ++i) ||
			 !strcmp(argv[i], "--format=json"))
			json = true;
		else
			return cli_usage("doctor: unknown option \"%s\"", argv[i]), DOCTOR_CANNOT_CHECK;
	}
	if (geteuid() != 0)
		return cannot_check("it needs root (the state, the store and the cgroups are root's)");
	sl_ctx ctx;
	sl_err err = { 0 };
	if (ctx_open(&ctx, &err) < 0)
		return cannot_check(err.msg);
	_cleanup_cjson_ cJSON *arr = json ? cJSON_CreateArray() : NULL;
	int found = 0, left = 0;
	int r = doctor_run(&ctx, repair, json ? add_json : print_text, json ? (void *)arr : &repair,
			   &found, &left, &err);
	ctx_close(&ctx);
	if (r < 0)
		return cannot_check(err.msg);
	if (json) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddItemToObject(o, "findings", arr);
		arr = NULL;
		cJSON_AddNumberToObject(o, "found", found);
		cJSON_AddNumberToObject(o, "left", left);
		cJSON_AddBoolToObject(o, "clean", left == 0);
		char *s = cJSON_Print(o);
		puts(s);
		cJSON_free(s);
		cJSON_Delete(o);
	} else if (!found) {
		puts("clean: nothing broken or orphaned");
	} else {
		printf("%d found, %d repaired, %d left%s\n", found, found - left, left,
		       left && !repair ? " (sandlot doctor --repair removes them)" : "");
	}
	return left ? DOCTOR_PROBLEMS : DOCTOR_CLEAN;
}
