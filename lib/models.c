/* models.c - the registry of built-in workloads (see scar/model.h). */
#include <string.h>

#include "scar/model.h"
#include "model_util.h"

static const struct scar_model_def *const models[] = {
	&scar_model_lda,
	&scar_model_mf,
	&scar_model_mlr,
	&scar_model_ridge,
	NULL,
};

const struct scar_model_def *const *scar_models(void)
{
	return models;
}

const struct scar_model_def *scar_model_find(const char *name)
{
	for (size_t i = 0; name && models[i]; i++)
		if (strcmp(models[i]->name, name) == 0)
			return models[i];
	return NULL;
}

int scar_model_configure(const char *model, const json_t *config, json_t **out,
			 struct scar_error *err)
{
	const struct scar_model_def *def = scar_model_find(model);
	json_t *c;
	int rc;

	if (out)
		*out = NULL;
	if (!def)
		return scar_error_set(err, SCAR_EINVAL, "unknown model '%s'", model ? model : "");
	if (config && !json_is_object(config))
		return scar_error_set(err, SCAR_EINVAL, "%s: configuration is not an object", def->name);
	/* A copy: the caller's object stays as it was, whatever configure() adds or refuses. */
	if (!(c = config ? json_deep_copy(config) : json_object()))
		return scar_error_set(err, SCAR_ENOMEM, "out of memory");
	if ((rc = def->configure(c, err)) || !out)
		json_decref(c);
	else
		*out = c;
	return rc;
}

const struct scar_model_key *scar_model_key_find(const struct scar_model_def *def,
						 const char *name)
{
	for (const struct scar_model_key *k = def && name ? def->keys : NULL; k && k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}

const char *scar_key_type_name(enum scar_key_type t)
{
	return t == SCAR_KEY_INT ? "integer" : t == SCAR_KEY_REAL ? "real" : "string";
}
