/*
 * png_stats — a tiny PNG reader for the browser test: prints
 *     <width> <height> <distinct colours> <non-background permille>
 * for an 8-bit RGB/RGBA/grey non-interlaced PNG (what Chromium's
 * --screenshot writes). The background is the colour of the top-left pixel.
 * Exit 0 on success, 1 on a file it cannot read. Distinct colours are
 * counted exactly up to 65536 with an open-addressing set.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

static int fail(const char *msg)
{
    fprintf(stderr, "png_stats: %s\n", msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) return fail("usage: png_stats FILE.png");
    FILE *fp = fopen(argv[1], "rb");
    if (!fp) return fail("cannot open the file");
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    if (n < 8 + 25) return fail("file too small for a PNG");
    unsigned char *f = malloc((size_t)n);
    if (!f || fread(f, 1, (size_t)n, fp) != (size_t)n) return fail("cannot read the file");
    fclose(fp);
    if (memcmp(f, "\x89PNG\r\n\x1a\n", 8) != 0) return fail("not a PNG");
    uint32_t w = 0, h = 0;
    int depth = 0, ctype = 0, interlace = 0;
    unsigned char *idat = NULL;
    size_t idat_n = 0;
    for (long off = 8; off + 12 <= n;) {
        uint32_t len = be32(f + off);
        const unsigned char *type = f + off + 4, *data = f + off + 8;
        if ((long)len > n - off - 12) return fail("truncated chunk");
        if (memcmp(type, "IHDR", 4) == 0) {
            w = be32(data);
            h = be32(data + 4);
            depth = data[8];
            ctype = data[9];
            interlace = data[12];
        } else if (memcmp(type, "IDAT", 4) == 0) {
            idat = realloc(idat, idat_n + len);
            memcpy(idat + idat_n, data, len);
            idat_n += len;
        }
        off += 12 + (long)len;
    }
    int ch = ctype == 2 ? 3 : ctype == 6 ? 4 : ctype == 0 ? 1 : ctype == 4 ? 2 : 0;
    if (depth != 8 || ch == 0 || interlace) return fail("only 8-bit non-interlaced grey/RGB/RGBA PNGs");
    if (w == 0 || h == 0 || w > 20000 || h > 20000) return fail("bad image size");
    size_t stride = (size_t)w * (size_t)ch, raw_n = (stride + 1) * h;
    unsigned char *raw = malloc(raw_n);
    uLongf got = (uLongf)raw_n;
    if (!raw || uncompress(raw, &got, idat, (uLong)idat_n) != Z_OK || got != raw_n)
        return fail("cannot inflate the image data");
    unsigned char *img = malloc(stride * h);
    for (uint32_t y = 0; y < h; y++) {
        int ft = raw[y * (stride + 1)];
        const unsigned char *src = raw + y * (stride + 1) + 1;
        unsigned char *row = img + y * stride, *up = y ? row - stride : NULL;
        for (size_t x = 0; x < stride; x++) {
            int a = x >= (size_t)ch ? row[x - (size_t)ch] : 0, b = up ? up[x] : 0;
            int c = up && x >= (size_t)ch ? up[x - (size_t)ch] : 0, v = src[x];
            switch (ft) {
            case 1: v += a; break;
            case 2: v += b; break;
            case 3: v += (a + b) / 2; break;
            case 4: v += paeth(a, b, c); break;
            default: break;
            }
            row[x] = (unsigned char)v;
        }
    }
    enum { SET = 1 << 17 };
    uint32_t *set = calloc(SET, sizeof *set);
    long distinct = 0, non_bg = 0;
    uint32_t bg = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            const unsigned char *p = img + y * stride + (size_t)x * (size_t)ch;
            uint32_t rgb = ch >= 3 ? (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2] : (uint32_t)p[0] * 0x010101u;
            if (x == 0 && y == 0) bg = rgb;
            if (rgb != bg) non_bg++;
            uint32_t key = rgb + 1, hsh = (key * 2654435761u) & (SET - 1);
            while (distinct < SET / 2 && set[hsh] && set[hsh] != key) hsh = (hsh + 1) & (SET - 1);
            if (distinct < SET / 2 && !set[hsh]) {
                set[hsh] = key;
                distinct++;
            }
        }
    printf("%u %u %ld %ld\n", w, h, distinct, non_bg * 1000 / ((long)w * (long)h));
    free(set);
    free(img);
    free(raw);
    free(idat);
    free(f);
    return 0;
}
