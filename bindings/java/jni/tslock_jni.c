/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tslock_jni.c - the native side of the tslock Java binding (class
 * tslock.Native): thin calls on the library's objects, whose pointers
 * Java keeps in longs.  Every call returns the library's code and Java
 * turns it into an exception, so no call here throws except for memory;
 * none touches a Java monitor, so a blocked acquire never holds one.
 * The watchdog's failure is the one call back into Java, from the
 * watchdog's own thread, attached for the call and detached after it.
 */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tslock.h"
#include "tslock_Native.h" /* javac -h: the prototypes */

static JavaVM *jvm;
static jmethodID sink_failed; /* tslock.WatchdogSink.failed(int, String) */
/* tslock.Client$Pool.event(int, String, int, long, int, boolean, boolean) */
static jmethodID pool_event;

#define PTR(type, v) ((type *)(intptr_t)(v))

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
    JNIEnv *env;
    jclass sink;

    (void)reserved;
    jvm = vm;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK)
        return JNI_ERR;
    sink = (*env)->FindClass(env, "tslock/WatchdogSink");
    if (sink == NULL)
        return JNI_ERR;
    sink_failed =
        (*env)->GetMethodID(env, sink, "failed", "(ILjava/lang/String;)V");
    (*env)->DeleteLocalRef(env, sink);
    sink = (*env)->FindClass(env, "tslock/Client$Pool");
    if (sink == NULL)
        return JNI_ERR;
    pool_event =
        (*env)->GetMethodID(env, sink, "event", "(ILjava/lang/String;IJIZZ)V");
    (*env)->DeleteLocalRef(env, sink);
    return sink_failed != NULL && pool_event != NULL ? JNI_VERSION_1_8
                                                     : JNI_ERR;
}

/* A Java string as UTF-8 for the length of one call; NULL stays NULL. */
static const char *utf(JNIEnv *env, jstring s)
{
    return s != NULL ? (*env)->GetStringUTFChars(env, s, NULL) : NULL;
}

static void unutf(JNIEnv *env, jstring s, const char *c)
{
    if (c != NULL)
        (*env)->ReleaseStringUTFChars(env, s, c);
}

static jstring jstr(JNIEnv *env, const char *c)
{
    return c != NULL ? (*env)->NewStringUTF(env, c) : NULL;
}

/* ------------------------------------------------------------- client */

/*
 * A connection as Java holds it: one library client, or one per master
 * of a Redlock (Client.fromUrl with several URLs).
 */
struct jconn {
    jobject pool;  /* global reference to the Client.Pool, or NULL */
    int observing; /* the Pool has an observer: read from any thread */
    int n;
    tslock_client *c[];
};

/* A lock object as Java holds it: a plain lock, or a Redlock. */
struct jlock {
    tslock_lock *l;
    tslock_redlock *rl;
    tslock_client *client; /* the plain lock's, for its messages */
};

static void conn_free(JNIEnv *env, struct jconn *c)
{
    int i;

    if (c == NULL)
        return;
    for (i = 0; i < c->n; i++)
        tslock_client_free(c->c[i]);
    if (c->pool != NULL)
        (*env)->DeleteGlobalRef(env, c->pool);
    free(c);
}

/*
 * The observer of every client of a connection: nothing without a Java
 * observer; else Pool.event() on this thread, attached to the JVM for
 * the call when it is a watchdog's.
 */
static void conn_observe(const tslock_event *e, void *userdata)
{
    struct jconn *c = userdata;
    JNIEnv *env = NULL;
    int attached = 0;
    jstring key;

    if (!__atomic_load_n(&c->observing, __ATOMIC_RELAXED) || c->pool == NULL)
        return;
    if ((*jvm)->GetEnv(jvm, (void **)&env, JNI_VERSION_1_8) == JNI_EDETACHED) {
        if ((*jvm)->AttachCurrentThreadAsDaemon(jvm, (void **)&env, NULL)
            != JNI_OK)
            return;
        attached = 1;
    }
    key = jstr(env, e->key);
    if (key != NULL)
        (*env)->CallVoidMethod(env, c->pool, pool_event, (jint)e->type, key,
                               (jint)e->result, (jlong)e->duration_ms,
                               (jint)e->scheme,
                               e->legacy ? JNI_TRUE : JNI_FALSE,
                               e->from_watchdog ? JNI_TRUE : JNI_FALSE);
    if ((*env)->ExceptionCheck(env))
        (*env)->ExceptionClear(env); /* Pool.event catches; never leak one */
    if (key != NULL)
        (*env)->DeleteLocalRef(env, key);
    if (attached)
        (*jvm)->DetachCurrentThread(jvm);
}

/* Whether the connection calls its Pool's observer. */
JNIEXPORT void JNICALL Java_tslock_Native_connObserve(JNIEnv *env, jclass k,
                                                      jlong c, jboolean on)
{
    (void)env;
    (void)k;
    __atomic_store_n(&PTR(struct jconn, c)->observing, on ? 1 : 0,
                     __ATOMIC_RELAXED);
}

/* n unconnected clients with these timeouts, or 0. */
JNIEXPORT jlong JNICALL Java_tslock_Native_connNew(JNIEnv *env, jclass k,
                                                   jint n, jint connect_ms,
                                                   jint command_ms,
                                                   jobject pool)
{
    struct jconn *c;
    int i;

    (void)k;
    if (n < 1 || n > 63)
        return 0;
    c = calloc(1, sizeof(*c) + (size_t)n * sizeof(c->c[0]));
    if (c == NULL)
        return 0;
    if (pool != NULL && (c->pool = (*env)->NewGlobalRef(env, pool)) == NULL) {
        free(c);
        return 0;
    }
    for (i = 0; i < n; i++) {
        c->n = i + 1;
        if (tslock_client_new(&c->c[i]) != TSLOCK_OK
            || tslock_client_set_timeouts(c->c[i], connect_ms, command_ms)
                   != TSLOCK_OK
            || tslock_client_set_observer(c->c[i], conn_observe, c)
                   != TSLOCK_OK) {
            conn_free(env, c);
            return 0;
        }
    }
    return (jlong)(intptr_t)c;
}

/* Connect client i where url says. */
JNIEXPORT jint JNICALL Java_tslock_Native_connectUrl(JNIEnv *env, jclass k,
                                                     jlong c, jint i,
                                                     jstring url)
{
    const char *u = utf(env, url);
    int rc;

    (void)k;
    if (url != NULL && u == NULL)
        return TSLOCK_ENOMEM;
    rc = tslock_client_connect_url(PTR(struct jconn, c)->c[i], u);
    unutf(env, url, u);
    return rc;
}

JNIEXPORT void JNICALL Java_tslock_Native_connFree(JNIEnv *env, jclass k,
                                                   jlong c)
{
    (void)env;
    (void)k;
    conn_free(env, PTR(struct jconn, c));
}

/*
 * Add what the connection's clients counted (tslock_client_stats(3)) into
 * out, in the order of Stats.java: the counters, then each histogram's
 * cumulative buckets, sum in ms and count.
 */
#define JSTATS_LEN (16 + 2 * (TSLOCK_STATS_BUCKETS + 2))
JNIEXPORT jint JNICALL Java_tslock_Native_connStats(JNIEnv *env, jclass k,
                                                    jlong c, jlongArray out)
{
    struct jconn *jc = PTR(struct jconn, c);
    jlong v[JSTATS_LEN];
    int i, b;

    (void)k;
    if (out == NULL || (*env)->GetArrayLength(env, out) != JSTATS_LEN)
        return TSLOCK_EINVAL;
    (*env)->GetLongArrayRegion(env, out, 0, JSTATS_LEN, v);
    for (i = 0; i < jc->n; i++) {
        tslock_stats s;
        const tslock_histogram *h[2] = {&s.wait, &s.hold};
        uint64_t counts[16];
        int j, at = 16;

        if (tslock_client_stats(jc->c[i], &s, sizeof(s)) != TSLOCK_OK)
            return TSLOCK_EINVAL;
        counts[0] = s.acquired;
        counts[1] = s.busy;
        counts[2] = s.timed_out;
        counts[3] = s.canceled;
        counts[4] = s.errors;
        for (j = 1; j < 4; j++)
            counts[4 + j] = s.by_scheme[j];
        counts[8] = s.released;
        counts[9] = s.lost;
        counts[10] = s.renewals;
        counts[11] = s.renewal_failures;
        counts[12] = s.takeovers;
        counts[13] = s.legacy_takeovers;
        counts[14] = s.wakes;
        counts[15] = s.retries;
        for (j = 0; j < 16; j++)
            v[j] += (jlong)counts[j];
        for (j = 0; j < 2; j++) {
            for (b = 0; b < TSLOCK_STATS_BUCKETS; b++)
                v[at++] += (jlong)h[j]->bucket[b];
            v[at++] += (jlong)h[j]->sum_ms;
            v[at++] += (jlong)h[j]->count;
        }
    }
    (*env)->SetLongArrayRegion(env, out, 0, JSTATS_LEN, v);
    return TSLOCK_OK;
}

/* A plain connection that failed (a Redlock reconnects its own). */
JNIEXPORT jboolean JNICALL Java_tslock_Native_connIsBroken(JNIEnv *env,
                                                           jclass k, jlong c)
{
    struct jconn *jc = PTR(struct jconn, c);

    (void)env;
    (void)k;
    return jc->n == 1 && tslock_client_is_broken(jc->c[0]) ? JNI_TRUE
                                                           : JNI_FALSE;
}

/* Every client of a connection woken this way (TSLOCK_PUBSUB_*). */
JNIEXPORT jint JNICALL Java_tslock_Native_connSetPubsub(JNIEnv *env, jclass k,
                                                        jlong c, jint mode)
{
    struct jconn *jc = PTR(struct jconn, c);
    int i, rc = TSLOCK_OK;

    (void)env;
    (void)k;
    for (i = 0; i < jc->n && rc == TSLOCK_OK; i++)
        rc = tslock_client_set_pubsub(jc->c[i], mode);
    return rc;
}

/* The pub/sub the connection's (first) client uses now. */
JNIEXPORT jint JNICALL Java_tslock_Native_connGetPubsub(JNIEnv *env, jclass k,
                                                        jlong c)
{
    (void)env;
    (void)k;
    return tslock_client_get_pubsub(PTR(struct jconn, c)->c[0]);
}

/* The detail of client i's last error. */
JNIEXPORT jstring JNICALL Java_tslock_Native_connErrstr(JNIEnv *env, jclass k,
                                                        jlong c, jint i)
{
    (void)k;
    return jstr(env, tslock_client_errstr(PTR(struct jconn, c)->c[i]));
}

JNIEXPORT jstring JNICALL Java_tslock_Native_errname(JNIEnv *env, jclass k,
                                                     jint code)
{
    (void)k;
    return jstr(env, tslock_errname(code));
}

JNIEXPORT jstring JNICALL Java_tslock_Native_strerror(JNIEnv *env, jclass k,
                                                      jint code)
{
    (void)k;
    return jstr(env, tslock_strerror(code));
}

/* --------------------------------------------------------------- lock */

/* A new lock object on key over conn, or 0 (no memory). */
JNIEXPORT jlong JNICALL Java_tslock_Native_lockNew(JNIEnv *env, jclass k,
                                                   jlong c, jstring key)
{
    struct jconn *jc = PTR(struct jconn, c);
    const char *name = utf(env, key);
    struct jlock *j = calloc(1, sizeof(*j));
    int rc = TSLOCK_ENOMEM;

    (void)k;
    if (name != NULL && j != NULL && jc->n == 1) {
        j->client = jc->c[0];
        rc = tslock_lock_new(&j->l, jc->c[0], name);
    } else if (name != NULL && j != NULL) {
        rc = tslock_redlock_new(&j->rl, jc->c, (size_t)jc->n, name);
    }
    unutf(env, key, name);
    if (rc != TSLOCK_OK) {
        free(j);
        return 0;
    }
    return (jlong)(intptr_t)j;
}

/* The settings of a lock, in one call: the first refusal's code. */
JNIEXPORT jint JNICALL Java_tslock_Native_lockConfigure(
    JNIEnv *env, jclass k, jlong lp, jint scheme, jlong ttl_ms, jint unit,
    jboolean fair, jboolean fencing, jint rw, jlong permits)
{
    struct jlock *j = PTR(struct jlock, lp);
    tslock_lock *l = j->l;
    int rc;

    (void)env;
    (void)k;
    if (j->rl != NULL) /* Java refuses what a Redlock cannot take */
        return tslock_redlock_set_ttl(j->rl, ttl_ms);
    rc = tslock_lock_set_ttl(l, ttl_ms);
    if (rc == TSLOCK_OK && scheme != TSLOCK_SCHEME_AUTO)
        rc = tslock_lock_set_scheme(l, (tslock_scheme)scheme);
    if (rc == TSLOCK_OK && unit != TSLOCK_UNIT_MS)
        rc = tslock_lock_set_unit(l, (tslock_unit)unit);
    if (rc == TSLOCK_OK && fair)
        rc = tslock_lock_set_fair(l, 1);
    if (rc == TSLOCK_OK && fencing)
        rc = tslock_lock_set_fencing(l, 1);
    if (rc == TSLOCK_OK && rw != TSLOCK_RW_OFF)
        rc = tslock_lock_set_rw(l, (tslock_rw)rw);
    if (rc == TSLOCK_OK && permits > 0)
        rc = tslock_lock_set_permits(l, permits);
    return rc;
}

JNIEXPORT jint JNICALL Java_tslock_Native_lockSetDialect(JNIEnv *env, jclass k,
                                                         jlong lp,
                                                         jstring dialect)
{
    struct jlock *j = PTR(struct jlock, lp);
    const char *d = utf(env, dialect);
    int rc;

    (void)k;
    if (d == NULL)
        return TSLOCK_ENOMEM;
    rc = j->rl != NULL ? TSLOCK_EUNSUPPORTED : tslock_lock_set_dialect(j->l, d);
    unutf(env, dialect, d);
    return rc;
}

JNIEXPORT jstring JNICALL Java_tslock_Native_dialectCheck(JNIEnv *env, jclass k,
                                                          jstring dialect)
{
    const char *d = utf(env, dialect);
    char why[400];
    int rc;

    (void)k;
    if (d == NULL)
        return NULL;
    rc = tslock_dialect_check(d, why, sizeof(why));
    unutf(env, dialect, d);
    return rc == TSLOCK_OK ? NULL : jstr(env, why);
}

JNIEXPORT jobjectArray JNICALL Java_tslock_Native_dialects(JNIEnv *env,
                                                           jclass k)
{
    jclass string = (*env)->FindClass(env, "java/lang/String");
    jobjectArray out;
    const char *name;
    size_t i, n = 0;

    (void)k;
    while (tslock_dialect_preset(n) != NULL)
        n++;
    if (string == NULL
        || (out = (*env)->NewObjectArray(env, (jsize)n, string, NULL)) == NULL)
        return NULL;
    for (i = 0; (name = tslock_dialect_preset(i)) != NULL; i++) {
        char row[512];
        jstring s;
        snprintf(row, sizeof(row), "%s\t%s\t%s", name,
                 tslock_dialect_format(name), tslock_dialect_library(name));
        if ((s = jstr(env, row)) == NULL)
            return NULL;
        (*env)->SetObjectArrayElement(env, out, (jsize)i, s);
        (*env)->DeleteLocalRef(env, s);
    }
    return out;
}

JNIEXPORT void JNICALL Java_tslock_Native_lockFree(JNIEnv *env, jclass k,
                                                   jlong lp)
{
    struct jlock *j = PTR(struct jlock, lp);

    (void)env;
    (void)k;
    if (j == NULL)
        return;
    tslock_lock_free(j->l);
    tslock_redlock_free(j->rl);
    free(j);
}

/* The detail of the lock's last operation. */
JNIEXPORT jstring JNICALL Java_tslock_Native_lockErrstr(JNIEnv *env, jclass k,
                                                        jlong lp)
{
    struct jlock *j = PTR(struct jlock, lp);

    (void)k;
    return jstr(env, j->rl != NULL ? tslock_redlock_errstr(j->rl)
                                   : tslock_client_errstr(j->client));
}

JNIEXPORT jint JNICALL Java_tslock_Native_acquire(JNIEnv *env, jclass k,
                                                  jlong lp, jlong wait_ms)
{
    struct jlock *j = PTR(struct jlock, lp);

    (void)env;
    (void)k;
    return j->rl != NULL ? tslock_redlock_acquire(j->rl, wait_ms)
                         : tslock_acquire(j->l, wait_ms);
}

JNIEXPORT jint JNICALL Java_tslock_Native_release(JNIEnv *env, jclass k,
                                                  jlong lp)
{
    struct jlock *j = PTR(struct jlock, lp);

    (void)env;
    (void)k;
    return j->rl != NULL ? tslock_redlock_release(j->rl) : tslock_release(j->l);
}

JNIEXPORT jint JNICALL Java_tslock_Native_extend(JNIEnv *env, jclass k,
                                                 jlong lp, jlong ttl_ms)
{
    struct jlock *j = PTR(struct jlock, lp);

    (void)env;
    (void)k;
    return j->rl != NULL ? tslock_redlock_extend(j->rl, ttl_ms)
                         : tslock_extend(j->l, ttl_ms);
}

JNIEXPORT jint JNICALL Java_tslock_Native_cancel(JNIEnv *env, jclass k,
                                                 jlong lp)
{
    struct jlock *j = PTR(struct jlock, lp);

    (void)env;
    (void)k;
    return j->rl != NULL ? tslock_redlock_cancel(j->rl)
                         : tslock_lock_cancel(j->l);
}

JNIEXPORT jboolean JNICALL Java_tslock_Native_isHeld(JNIEnv *env, jclass k,
                                                     jlong lp)
{
    struct jlock *j = PTR(struct jlock, lp);
    int held = j->rl != NULL ? tslock_redlock_is_held(j->rl)
                             : tslock_lock_is_held(j->l);

    (void)env;
    (void)k;
    return held ? JNI_TRUE : JNI_FALSE;
}

/* The hold's fencing number; 0 for a Redlock, which has none. */
JNIEXPORT jlong JNICALL Java_tslock_Native_fence(JNIEnv *env, jclass k,
                                                 jlong lp)
{
    struct jlock *j = PTR(struct jlock, lp);

    (void)env;
    (void)k;
    return j->rl != NULL ? 0 : tslock_lock_fence(j->l);
}

JNIEXPORT jstring JNICALL Java_tslock_Native_handle(JNIEnv *env, jclass k,
                                                    jlong lp)
{
    struct jlock *j = PTR(struct jlock, lp);

    (void)k;
    return jstr(env, j->rl != NULL ? tslock_redlock_handle(j->rl)
                                   : tslock_lock_handle(j->l));
}

JNIEXPORT jint JNICALL Java_tslock_Native_adopt(JNIEnv *env, jclass k, jlong lp,
                                                jstring handle)
{
    struct jlock *j = PTR(struct jlock, lp);
    const char *h = utf(env, handle);
    int rc;

    (void)k;
    if (h == NULL)
        return TSLOCK_EINVAL;
    rc = j->rl != NULL ? tslock_redlock_adopt(j->rl, h)
                       : tslock_lock_adopt(j->l, h);
    unutf(env, handle, h);
    return rc;
}

/* ----------------------------------------------------------- watchdog */

/* A watchdog and the global reference to the Java sink it reports to. */
struct jwatchdog {
    tslock_watchdog *wd;
    jobject sink;
};

/* From the watchdog's thread: tell the sink, attached for the call. */
static void watchdog_failed(int code, const char *detail, void *userdata)
{
    struct jwatchdog *w = userdata;
    JNIEnv *env = NULL;
    int attached = 0;
    jstring text;

    if ((*jvm)->GetEnv(jvm, (void **)&env, JNI_VERSION_1_8) == JNI_EDETACHED) {
        if ((*jvm)->AttachCurrentThreadAsDaemon(jvm, (void **)&env, NULL)
            != JNI_OK)
            return;
        attached = 1;
    }
    text = jstr(env, detail);
    (*env)->CallVoidMethod(env, w->sink, sink_failed, (jint)code, text);
    if ((*env)->ExceptionCheck(env))
        (*env)->ExceptionClear(env); /* the sink catches; never leak one */
    if (text != NULL)
        (*env)->DeleteLocalRef(env, text);
    if (attached)
        (*jvm)->DetachCurrentThread(jvm);
}

/* A running watchdog (> 0), or the library's code (< 0); plain locks. */
JNIEXPORT jlong JNICALL Java_tslock_Native_watchdogStart(JNIEnv *env, jclass k,
                                                         jlong l,
                                                         jlong renew_client,
                                                         jlong interval_ms,
                                                         jobject sink)
{
    struct jwatchdog *w = calloc(1, sizeof(*w));
    int rc;

    (void)k;
    if (w == NULL)
        return TSLOCK_ENOMEM;
    w->sink = (*env)->NewGlobalRef(env, sink);
    if (w->sink == NULL) {
        free(w);
        return TSLOCK_ENOMEM;
    }
    rc = tslock_watchdog_start(&w->wd, PTR(struct jlock, l)->l,
                               PTR(struct jconn, renew_client)->c[0],
                               interval_ms, watchdog_failed, w);
    if (rc != TSLOCK_OK) {
        (*env)->DeleteGlobalRef(env, w->sink);
        free(w);
        return rc;
    }
    return (jlong)(intptr_t)w;
}

/* Stop, join, free: the watchdog's final status. */
JNIEXPORT jint JNICALL Java_tslock_Native_watchdogStop(JNIEnv *env, jclass k,
                                                       jlong p)
{
    struct jwatchdog *w = PTR(struct jwatchdog, p);
    int rc;

    (void)k;
    if (w == NULL)
        return TSLOCK_OK;
    rc = tslock_watchdog_stop(w->wd);
    (*env)->DeleteGlobalRef(env, w->sink);
    free(w);
    return rc;
}
