/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * error.c - libtslock's error codes in PHP: the exceptions of the
 * Tslock\Exception namespace, each carrying the library's code as its
 * getCode() and the code's name (tslock_errname()) as getErrorName(),
 * and the codes themselves as constants Tslock\EBUSY, ... taken from the
 * library's one table (TSLOCK_ERRNO_MAP), so they cannot drift.
 */
#include "php_tslock.h"

#include "ext/spl/spl_exceptions.h"
#include "zend_exceptions.h"

static zend_class_entry *lock_exception_ce, *connection_exception_ce,
    *lost_exception_ce, *invalid_exception_ce;
zend_class_entry *ptslock_timeout_exception_ce;

ZEND_BEGIN_ARG_WITH_RETURN_TYPE_INFO_EX(arginfo_error_name, 0, 0, IS_STRING, 0)
ZEND_END_ARG_INFO()

/* LockException::getErrorName(): "TSLOCK_EBUSY" and the like. */
static PHP_METHOD(LockException, getErrorName)
{
    zval rv, *code;

    ZEND_PARSE_PARAMETERS_NONE();
    code = zend_read_property(zend_ce_exception, Z_OBJ_P(ZEND_THIS), "code",
                              sizeof("code") - 1, 1, &rv);
    RETURN_STRING(tslock_errname(
        code != NULL && Z_TYPE_P(code) == IS_LONG ? (int)Z_LVAL_P(code) : 1));
}

static const zend_function_entry lock_exception_methods[] = {
    PHP_ME(LockException, getErrorName, arginfo_error_name, ZEND_ACC_PUBLIC)
        PHP_FE_END};

static zend_class_entry *subclass(const char *name, zend_class_entry *parent)
{
    zend_class_entry ce;

    INIT_CLASS_ENTRY_EX(ce, name, strlen(name), NULL);
    return zend_register_internal_class_ex(&ce, parent);
}

void ptslock_error_minit(int module_number)
{
    zend_class_entry ce;

    INIT_CLASS_ENTRY(ce, "Tslock\\Exception\\LockException",
                     lock_exception_methods);
    lock_exception_ce =
        zend_register_internal_class_ex(&ce, spl_ce_RuntimeException);
    connection_exception_ce =
        subclass("Tslock\\Exception\\ConnectionException", lock_exception_ce);
    lost_exception_ce =
        subclass("Tslock\\Exception\\LockLostException", lock_exception_ce);
    ptslock_timeout_exception_ce =
        subclass("Tslock\\Exception\\LockTimeoutException", lock_exception_ce);
    invalid_exception_ce = subclass(
        "Tslock\\Exception\\InvalidArgumentException", lock_exception_ce);

#define PTSLOCK_CONSTANT(name, num, msg)                                       \
    REGISTER_NS_LONG_CONSTANT("Tslock", #name, num, CONST_PERSISTENT);
    TSLOCK_ERRNO_MAP(PTSLOCK_CONSTANT)
#undef PTSLOCK_CONSTANT
}

/* The class a code is thrown as: what a caller may want to catch apart. */
static zend_class_entry *class_of(int code)
{
    switch (code) {
    case TSLOCK_ELOST:
        return lost_exception_ce;
    case TSLOCK_EINVAL:
        return invalid_exception_ce;
    case TSLOCK_EIO:
    case TSLOCK_ETIMEDOUT:
    case TSLOCK_EPROTO:
    case TSLOCK_ESERVER:
    case TSLOCK_EAUTH:
    case TSLOCK_ETLS:
    case TSLOCK_ENOPERM:
    case TSLOCK_ECLUSTER:
    case TSLOCK_ENOQUORUM:
        return connection_exception_ce;
    default:
        return lock_exception_ce;
    }
}

/* Throw code with the library's message and, when there is one, detail. */
void ptslock_throw(int code, const char *detail)
{
    if (EG(exception) != NULL)
        return;
    if (detail != NULL && detail[0] != '\0')
        zend_throw_exception_ex(class_of(code), code, "%s: %s (%s)",
                                tslock_errname(code), detail,
                                tslock_strerror(code));
    else
        zend_throw_exception_ex(class_of(code), code, "%s: %s",
                                tslock_errname(code), tslock_strerror(code));
}

/* Throw code with the client's detail of the failure. */
void ptslock_throw_client(int code, const tslock_client *client)
{
    ptslock_throw(code, client != NULL ? tslock_client_errstr(client) : NULL);
}
