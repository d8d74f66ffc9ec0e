/* Errors as values, and their rendering (file:line:col, source line, caret, hint). */
#include "trainsim/common.h"

#include <stdarg.h>
#include <string.h>

TsStatus ts_err(TsError *err, TsStatus code, const char *fmt, ...)
{
    if (!err) return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void ts_err_at(TsError *err, const char *file, int line, int col, const char *src)
{
    if (!err) return;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    err->line = line;
    err->col = col;
    err->src_line[0] = '\0';
    if (!src || line <= 0) return;
    const char *p = src;
    for (int l = 1; l < line && *p; l++) {
        const char *nl = strchr(p, '\n');
        if (!nl) return;
        p = nl + 1;
    }
    size_t n = strcspn(p, "\r\n");
    if (n >= sizeof err->src_line) n = sizeof err->src_line - 1;
    /* Replace control bytes so the caret line stays aligned and printable. */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        err->src_line[i] = (c == '\t') ? ' ' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    err->src_line[n] = '\0';
}

void ts_err_hint(TsError *err, const char *fmt, ...)
{
    if (!err) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->hint, sizeof err->hint, fmt, ap);
    va_end(ap);
}

void ts_err_clear(TsError *err)
{
    if (err) memset(err, 0, sizeof *err);
}

void ts_err_format(const TsError *err, TsBuf *out)
{
    if (err->file[0]) {
        ts_buf_puts(out, err->file);
        if (err->line > 0) {
            ts_buf_printf(out, ":%d", err->line);
            if (err->col > 0) ts_buf_printf(out, ":%d", err->col);
        }
        ts_buf_puts(out, ": ");
    }
    ts_buf_printf(out, "error: %s\n", err->msg);
    if (err->src_line[0]) {
        ts_buf_printf(out, "    %s\n", err->src_line);
        if (err->col > 0) {
            ts_buf_puts(out, "    ");
            for (int i = 1; i < err->col && i < TS_ERR_LINE_MAX; i++) ts_buf_puts(out, " ");
            ts_buf_puts(out, "^\n");
        }
    }
    if (err->hint[0]) ts_buf_printf(out, "hint: %s\n", err->hint);
}
