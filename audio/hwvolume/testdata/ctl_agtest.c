/* A software ALSA control plugin for the mixer's tests: a card with
 * "Master Playback Volume" (0..100, -50..0 dB in 0.5 dB steps) and
 * "Master Playback Switch", whose values are written to a file on every
 * change, as a real card's registers would hold them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <alsa/asoundlib.h>
#include <alsa/control_external.h>

struct agtest {
	snd_ctl_ext_t ext;
	char *file;
	long volume, sw;
};

static const unsigned int db_scale[] = {SND_CTL_TLVT_DB_SCALE, 2 * sizeof(unsigned int), (unsigned int)-5000, 50};

static void save(struct agtest *t) {
	FILE *f = fopen(t->file, "w");
	if (f) {
		fprintf(f, "%ld %ld\n", t->volume, t->sw);
		fclose(f);
	}
}

static int elem_count(snd_ctl_ext_t *ext) { return 2; }

static int elem_list(snd_ctl_ext_t *ext, unsigned int offset, snd_ctl_elem_id_t *id) {
	snd_ctl_elem_id_set_interface(id, SND_CTL_ELEM_IFACE_MIXER);
	snd_ctl_elem_id_set_name(id, offset == 0 ? "Master Playback Volume" : "Master Playback Switch");
	return 0;
}

static snd_ctl_ext_key_t find_elem(snd_ctl_ext_t *ext, const snd_ctl_elem_id_t *id) {
	const char *name = snd_ctl_elem_id_get_name(id);
	if (strcmp(name, "Master Playback Volume") == 0) return 0;
	if (strcmp(name, "Master Playback Switch") == 0) return 1;
	return SND_CTL_EXT_KEY_NOT_FOUND;
}

static int get_attribute(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, int *type, unsigned int *acc, unsigned int *count) {
	*type = key == 0 ? SND_CTL_ELEM_TYPE_INTEGER : SND_CTL_ELEM_TYPE_BOOLEAN;
	*acc = SND_CTL_EXT_ACCESS_READWRITE | (key == 0 ? SND_CTL_EXT_ACCESS_TLV_READ : 0);
	*count = 1;
	return 0;
}

static int get_integer_info(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *imin, long *imax, long *istep) {
	*imin = 0;
	*imax = key == 0 ? 100 : 1;
	*istep = 1;
	return 0;
}

static int read_integer(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *value) {
	struct agtest *t = ext->private_data;
	*value = key == 0 ? t->volume : t->sw;
	return 0;
}

static int write_integer(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *value) {
	struct agtest *t = ext->private_data;
	if (key == 0) t->volume = *value; else t->sw = *value;
	save(t);
	return 1;
}

static int read_event(snd_ctl_ext_t *ext, snd_ctl_elem_id_t *id, unsigned int *event_mask) { return -EAGAIN; }

static void agtest_close(snd_ctl_ext_t *ext) {
	struct agtest *t = ext->private_data;
	free(t->file);
	free(t);
}

static const snd_ctl_ext_callback_t callbacks = {
	.close = agtest_close, .elem_count = elem_count, .elem_list = elem_list, .find_elem = find_elem,
	.get_attribute = get_attribute, .get_integer_info = get_integer_info,
	.read_integer = read_integer, .write_integer = write_integer, .read_event = read_event,
};

SND_CTL_PLUGIN_DEFINE_FUNC(agtest) {
	snd_config_iterator_t i, next;
	const char *file = NULL;
	snd_config_for_each(i, next, conf) {
		snd_config_t *n = snd_config_iterator_entry(i);
		const char *id;
		if (snd_config_get_id(n, &id) < 0) continue;
		if (strcmp(id, "file") == 0) snd_config_get_string(n, &file);
	}
	if (!file) return -EINVAL;
	struct agtest *t = calloc(1, sizeof(*t));
	t->file = strdup(file);
	t->volume = 100;
	t->sw = 1;
	t->ext.version = SND_CTL_EXT_VERSION;
	t->ext.card_idx = 0;
	strcpy(t->ext.id, "agtest");
	strcpy(t->ext.driver, "agtest");
	strcpy(t->ext.name, "agtest");
	strcpy(t->ext.longname, "agenthost test card");
	strcpy(t->ext.mixername, "agtest");
	t->ext.callback = &callbacks;
	t->ext.private_data = t;
	t->ext.tlv.p = db_scale;
	int err = snd_ctl_ext_create(&t->ext, name, mode);
	if (err < 0) {
		free(t->file);
		free(t);
		return err;
	}
	save(t);
	*handlep = t->ext.handle;
	return 0;
}

SND_CTL_PLUGIN_SYMBOL(agtest);
