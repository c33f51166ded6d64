/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * module.c - the tslock extension's life cycle: classes and constants at
 * module start, the pool of persistent connections freed at module end,
 * and per request the table of held locks, whose locks RSHUTDOWN
 * releases so that nothing a request held outlives it.
 */
#include "php_tslock.h"

#include "ext/standard/info.h"

ZEND_DECLARE_MODULE_GLOBALS(tslock)

static PHP_GINIT_FUNCTION(tslock)
{
#if defined(COMPILE_DL_TSLOCK) && defined(ZTS)
    ZEND_TSRMLS_CACHE_UPDATE();
#endif
    memset(tslock_globals, 0, sizeof(*tslock_globals));
}

static PHP_MINIT_FUNCTION(tslock)
{
    ptslock_pool_init();
    ptslock_error_minit(module_number);
    ptslock_client_minit();
    ptslock_lock_minit();
    REGISTER_NS_STRING_CONSTANT("Tslock", "LIBRARY_VERSION",
                                (char *)tslock_version(), CONST_PERSISTENT);
    return SUCCESS;
}

static PHP_MSHUTDOWN_FUNCTION(tslock)
{
    ptslock_pool_free();
    return SUCCESS;
}

static PHP_RINIT_FUNCTION(tslock)
{
#if defined(COMPILE_DL_TSLOCK) && defined(ZTS)
    ZEND_TSRMLS_CACHE_UPDATE();
#endif
    zend_hash_init(&TSLOCK_G(held), 8, NULL, NULL, 0);
    TSLOCK_G(request_live) = true;
    return SUCCESS;
}

static PHP_RSHUTDOWN_FUNCTION(tslock)
{
    ptslock_release_held();
    TSLOCK_G(request_live) = false;
    zend_hash_destroy(&TSLOCK_G(held));
    return SUCCESS;
}

static PHP_MINFO_FUNCTION(tslock)
{
    char n[32];

    php_info_print_table_start();
    php_info_print_table_header(2, "tslock support", "enabled");
    php_info_print_table_row(2, "Extension version", PHP_TSLOCK_VERSION);
    php_info_print_table_row(2, "libtslock version", tslock_version());
    snprintf(n, sizeof(n), "%u", zend_hash_num_elements(&TSLOCK_G(pool)));
    php_info_print_table_row(2, "Persistent connections", n);
    php_info_print_table_end();
}

zend_module_entry tslock_module_entry = {STANDARD_MODULE_HEADER,
                                         "tslock",
                                         NULL,
                                         PHP_MINIT(tslock),
                                         PHP_MSHUTDOWN(tslock),
                                         PHP_RINIT(tslock),
                                         PHP_RSHUTDOWN(tslock),
                                         PHP_MINFO(tslock),
                                         PHP_TSLOCK_VERSION,
                                         PHP_MODULE_GLOBALS(tslock),
                                         PHP_GINIT(tslock),
                                         NULL,
                                         NULL,
                                         STANDARD_MODULE_PROPERTIES_EX};

#ifdef COMPILE_DL_TSLOCK
#ifdef ZTS
ZEND_TSRMLS_CACHE_DEFINE()
#endif
ZEND_GET_MODULE(tslock)
#endif
