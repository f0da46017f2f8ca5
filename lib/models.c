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
