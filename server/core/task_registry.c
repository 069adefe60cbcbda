/* The tasks this process knows, by name: the built-in families' (tasks/NAME.json, each parsed once
 * when first asked for) and the documents registered at run time (RegisterTask); "extends"
 * resolved among them. */
#include "task_decl.h"
#include "rs_json.h"
#include "rs_limits.h"
#include "rs_registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The documents a family's earlier documents extend, then the registered ones. */
typedef struct known_docs {
    int n;
    const char *const *sources;
} known_docs_t;

static const char *doc_name(json_object *doc)
{
    json_object *v;
    return json_object_is_type(doc, json_type_object) && json_object_object_get_ex(doc, "name", &v) &&
                   json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : "";
}

/* A family's documents extend their own earlier ones (its lock is held), else a registered
 * task's. */
static const char *family_source(const char *name, void *ctx)
{
    const known_docs_t *known = ctx;
    for (int i = 0; i < known->n; i++) {
        rs_status_t ignored;
        json_object *b = rs_json_parse(known->sources[i], strlen(known->sources[i]),
                                       "task document", RS_TASK_DOC_MAX_SOURCE,
                                       RS_TASK_DOC_MAX_NESTING, &ignored);
        int found = b && strcmp(doc_name(b), name) == 0;
        json_object_put(b);
        if (found)
            return known->sources[i];
    }
    return rs_task_doc_source(rs_task_doc_find(name));
}

/* Other documents extend any task declared as a document, built-in or registered. */
static const char *any_source(const char *name, void *ctx)
{
    (void)ctx;
    return rs_task_doc_source(rs_task_find(name));
}

rs_task_t *rs_task_doc_parse(const char *json, size_t len, rs_status_t *st)
{
    return rs_task_doc_parse_with(json, len, any_source, NULL, st);
}

static int is_builtin(const rs_task_t *t)
{
    const decl_t *k = rs_task_decl_of(t);
    return !k || k->builtin;
}

/* ---- the server's own tasks declared as documents (a family's JSON array) ---------------- */

#define MAX_FAMILY_TASKS 16

static pthread_mutex_t family_lock = PTHREAD_MUTEX_INITIALIZER;
static struct family_tasks {
    int parsed;
    int n;
    const rs_task_t *tasks[MAX_FAMILY_TASKS];
} *families; /* one per built-in family (rs_task_families), each parsed when first asked for */

/* Parse family f's documents (each may extend an earlier one); 0 or the first error. */
static int parse_family(const rs_task_family_t *f, struct family_tasks *out, rs_status_t *st)
{
    json_object *list = rs_json_parse(f->documents, strlen(f->documents), "task family",
                                      RS_TASK_DOC_MAX_SOURCE * 4, RS_TASK_DOC_MAX_NESTING,
                                      st);
    if (!list)
        return st->code;
    int rc = 0, n = json_object_is_type(list, json_type_array)
                        ? (int)json_object_array_length(list) : 0;
    if (n < 1 || n > MAX_FAMILY_TASKS)
        rc = rs_fail(st, RS_EINVAL, "a family is a JSON array of 1 to %d task documents",
                     MAX_FAMILY_TASKS);
    const char *sources[MAX_FAMILY_TASKS];
    for (int i = 0; i < n && rc == 0; i++) {
        const char *src = json_object_to_json_string_ext(json_object_array_get_idx(list, (size_t)i),
                                                         JSON_C_TO_STRING_PLAIN);
        known_docs_t known = {i, sources};
        rs_task_t *t = rs_task_doc_parse_with(src, strlen(src), family_source, &known, st);
        if (!t) {
            rc = st->code;
            break;
        }
        ((decl_t *)t)->builtin = 1;
        out->tasks[out->n++] = t;
        sources[i] = ((decl_t *)t)->source;
    }
    json_object_put(list);
    return rc;
}

const rs_task_t *const *rs_task_doc_family(const rs_task_family_t *f, int *n)
{
    int nfam;
    const rs_task_family_t *all = rs_task_families(&nfam);
    struct family_tasks *ft = NULL;
    pthread_mutex_lock(&family_lock);
    if (!families)
        families = calloc((size_t)nfam, sizeof *families); /* kept for the process's life */
    if (families && f >= all && f < all + nfam)
        ft = &families[f - all];
    if (ft && !ft->parsed) {
        rs_status_t st;
        ft->parsed = 1;
        if (parse_family(f, ft, &st) < 0) /* a document of the server's own: a test catches it */
            fprintf(stderr, "robosim: built-in task family tasks/%s.json does not parse: %s\n",
                    f->name, st.message);
    }
    pthread_mutex_unlock(&family_lock);
    *n = ft ? ft->n : 0;
    return ft ? ft->tasks : NULL;
}

/* ---- the process's registered tasks ------------------------------------------------------- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static rs_task_t *registered[RS_TASK_DOC_MAX_REGISTERED];
static int nregistered;

static const rs_task_t *find_locked(const char *name)
{
    for (int i = 0; i < nregistered; i++)
        if (strcmp(registered[i]->name, name) == 0)
            return registered[i];
    return NULL;
}

int rs_task_doc_register(const char *json, size_t len, const rs_task_t **out, rs_status_t *st)
{
    rs_task_t *t = rs_task_doc_parse(json, len, st);
    if (!t)
        return st->code;
    const rs_task_t *known = rs_task_find(t->name);
    if (known && is_builtin(known)) {
        int rc = rs_fail(st, RS_EINVAL, "name: '%s' is a built-in task; name the document "
                         "otherwise", t->name);
        rs_task_doc_destroy(&t);
        return rc;
    }
    int rc = 0;
    pthread_mutex_lock(&registry_lock);
    known = find_locked(t->name);
    if (known && strcmp(rs_task_doc_source(known), rs_task_doc_source(t)) != 0)
        rc = rs_fail(st, RS_EINVAL, "name: task '%s' is registered with another document; "
                     "give this one another name (e.g. a new -vN)", t->name);
    else if (!known && nregistered == RS_TASK_DOC_MAX_REGISTERED)
        rc = rs_fail(st, RS_EEXHAUSTED, "this server holds at most %d declared tasks",
                     RS_TASK_DOC_MAX_REGISTERED);
    else if (!known)
        registered[nregistered++] = t, known = t, t = NULL;
    pthread_mutex_unlock(&registry_lock);
    rs_task_doc_destroy(&t);
    if (out)
        *out = rc < 0 ? NULL : known;
    return rc;
}

rs_task_t *rs_task_doc_unregister(const rs_task_t *t)
{
    rs_task_t *out = NULL;
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < nregistered && !out; i++)
        if (registered[i] == t) {
            out = registered[i];
            registered[i] = registered[--nregistered];
        }
    pthread_mutex_unlock(&registry_lock);
    return out;
}

const rs_task_t *rs_task_doc_find(const char *name)
{
    pthread_mutex_lock(&registry_lock);
    const rs_task_t *t = find_locked(name);
    pthread_mutex_unlock(&registry_lock);
    return t;
}

int rs_task_doc_names(const char **names, int max)
{
    pthread_mutex_lock(&registry_lock);
    int n = 0;
    for (; n < nregistered && n < max; n++)
        names[n] = registered[n]->name;
    pthread_mutex_unlock(&registry_lock);
    return n;
}

#define MAX_TASKS (64 + RS_TASK_DOC_MAX_REGISTERED)

/* ---- task lookup: the built-in families' rows and the declared tasks, by name ---------- */

/* Row i of family f (NULL past its last), *n its rows. */
static const rs_task_t *family_task(const rs_task_family_t *f, int i, int *n)
{
    const rs_task_t *const *t = rs_task_doc_family(f, n);
    return i < *n ? t[i] : NULL;
}

const rs_task_t *rs_task_find(const char *name)
{
    int nfam;
    const rs_task_family_t *fam = rs_task_families(&nfam);
    for (int f = 0; name && f < nfam; f++) {
        int n = 0;
        const rs_task_t *t;
        for (int i = 0; (t = family_task(&fam[f], i, &n)) != NULL; i++)
            if (strcmp(t->name, name) == 0)
                return t;
    }
    return name ? rs_task_doc_find(name) : NULL; /* declared tasks */
}

/* The built-in and the declared tasks' names, NULL-terminated: a copy per thread, made at each
 * call (tasks may be registered meanwhile by another shard's thread), valid until the calling
 * thread's next call. */
const char *const *rs_task_names(void)
{
    static _Thread_local const char *names[MAX_TASKS + 1];
    int n = 0;
    int nfam;
    const rs_task_family_t *fam = rs_task_families(&nfam);
    for (int f = 0; f < nfam; f++) {
        int nf = 0;
        const rs_task_t *t;
        for (int i = 0; n < MAX_TASKS && (t = family_task(&fam[f], i, &nf)) != NULL; i++)
            names[n++] = t->name;
    }
    n += rs_task_doc_names(names + n, MAX_TASKS - n);
    names[n] = NULL;
    return names;
}
