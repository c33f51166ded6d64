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
    return sink_failed != NULL ? JNI_VERSION_1_8 : JNI_ERR;
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

JNIEXPORT jlong JNICALL Java_tslock_Native_clientNew(JNIEnv *env, jclass k,
                                                     jint connect_ms,
                                                     jint command_ms)
{
    tslock_client *c = NULL;

    (void)env;
    (void)k;
    if (tslock_client_new(&c) != TSLOCK_OK)
        return 0;
    if (tslock_client_set_timeouts(c, connect_ms, command_ms) != TSLOCK_OK) {
        tslock_client_free(c);
        return 0;
    }
    return (jlong)(intptr_t)c;
}

JNIEXPORT jint JNICALL Java_tslock_Native_connectUrl(JNIEnv *env, jclass k,
                                                     jlong c, jstring url)
{
    const char *u = utf(env, url);
    int rc;

    (void)k;
    if (url != NULL && u == NULL)
        return TSLOCK_ENOMEM;
    rc = tslock_client_connect_url(PTR(tslock_client, c), u);
    unutf(env, url, u);
    return rc;
}

JNIEXPORT void JNICALL Java_tslock_Native_clientFree(JNIEnv *env, jclass k,
                                                     jlong c)
{
    (void)env;
    (void)k;
    tslock_client_free(PTR(tslock_client, c));
}

JNIEXPORT jboolean JNICALL Java_tslock_Native_clientIsBroken(JNIEnv *env,
                                                             jclass k, jlong c)
{
    (void)env;
    (void)k;
    return tslock_client_is_broken(PTR(tslock_client, c)) ? JNI_TRUE
                                                          : JNI_FALSE;
}

JNIEXPORT jstring JNICALL Java_tslock_Native_clientErrstr(JNIEnv *env, jclass k,
                                                          jlong c)
{
    (void)k;
    return jstr(env, tslock_client_errstr(PTR(tslock_client, c)));
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

/* A new lock object on key, or 0 (an empty key is refused in Java). */
JNIEXPORT jlong JNICALL Java_tslock_Native_lockNew(JNIEnv *env, jclass k,
                                                   jlong c, jstring key)
{
    const char *name = utf(env, key);
    tslock_lock *l = NULL;

    (void)k;
    if (name == NULL)
        return 0;
    if (tslock_lock_new(&l, PTR(tslock_client, c), name) != TSLOCK_OK)
        l = NULL;
    unutf(env, key, name);
    return (jlong)(intptr_t)l;
}

/* The settings of a lock, in one call: the first refusal's code. */
JNIEXPORT jint JNICALL Java_tslock_Native_lockConfigure(
    JNIEnv *env, jclass k, jlong lp, jint scheme, jlong ttl_ms, jint unit,
    jboolean fair, jboolean fencing, jint rw, jlong permits)
{
    tslock_lock *l = PTR(tslock_lock, lp);
    int rc = tslock_lock_set_ttl(l, ttl_ms);

    (void)env;
    (void)k;
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

JNIEXPORT void JNICALL Java_tslock_Native_lockFree(JNIEnv *env, jclass k,
                                                   jlong l)
{
    (void)env;
    (void)k;
    tslock_lock_free(PTR(tslock_lock, l));
}

JNIEXPORT jint JNICALL Java_tslock_Native_acquire(JNIEnv *env, jclass k,
                                                  jlong l, jlong wait_ms)
{
    (void)env;
    (void)k;
    return tslock_acquire(PTR(tslock_lock, l), wait_ms);
}

JNIEXPORT jint JNICALL Java_tslock_Native_release(JNIEnv *env, jclass k,
                                                  jlong l)
{
    (void)env;
    (void)k;
    return tslock_release(PTR(tslock_lock, l));
}

JNIEXPORT jint JNICALL Java_tslock_Native_extend(JNIEnv *env, jclass k, jlong l,
                                                 jlong ttl_ms)
{
    (void)env;
    (void)k;
    return tslock_extend(PTR(tslock_lock, l), ttl_ms);
}

JNIEXPORT jint JNICALL Java_tslock_Native_cancel(JNIEnv *env, jclass k, jlong l)
{
    (void)env;
    (void)k;
    return tslock_lock_cancel(PTR(tslock_lock, l));
}

JNIEXPORT jboolean JNICALL Java_tslock_Native_isHeld(JNIEnv *env, jclass k,
                                                     jlong l)
{
    (void)env;
    (void)k;
    return tslock_lock_is_held(PTR(tslock_lock, l)) ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jlong JNICALL Java_tslock_Native_fence(JNIEnv *env, jclass k, jlong l)
{
    (void)env;
    (void)k;
    return tslock_lock_fence(PTR(tslock_lock, l));
}

JNIEXPORT jint JNICALL Java_tslock_Native_schemeUsed(JNIEnv *env, jclass k,
                                                     jlong l)
{
    (void)env;
    (void)k;
    return (jint)tslock_lock_scheme_used(PTR(tslock_lock, l));
}

JNIEXPORT jstring JNICALL Java_tslock_Native_handle(JNIEnv *env, jclass k,
                                                    jlong l)
{
    (void)k;
    return jstr(env, tslock_lock_handle(PTR(tslock_lock, l)));
}

JNIEXPORT jint JNICALL Java_tslock_Native_adopt(JNIEnv *env, jclass k, jlong l,
                                                jstring handle)
{
    const char *h = utf(env, handle);
    int rc;

    (void)k;
    if (h == NULL)
        return TSLOCK_EINVAL;
    rc = tslock_lock_adopt(PTR(tslock_lock, l), h);
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

/* A running watchdog (> 0), or the library's code (< 0). */
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
    rc = tslock_watchdog_start(&w->wd, PTR(tslock_lock, l),
                               PTR(tslock_client, renew_client), interval_ms,
                               watchdog_failed, w);
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
