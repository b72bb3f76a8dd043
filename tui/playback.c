/* playback.c — one playhead for the timeline, pipeline and memory views: its keys (play and
 * pause, event and op steps, speed, go to a time), the marks the views draw for it (a line,
 * the future dimmed) and the narration of what happens at it, read from the trace. */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "views.h"

/* A whole run plays in this many wall seconds at speed ×1. */
#define PLAY_SECONDS 20.0

int rl_tui_parse_time(const char *s, double *out)
{
    if (!isdigit((unsigned char)s[0]) && !(s[0] == '.' && isdigit((unsigned char)s[1])))
        return -1; /* a plain decimal: no sign, space, hex, inf or nan */
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return -1;
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0)
        return -1;
    while (*end == ' ')
        end++;
    static const struct { const char *unit; double scale; } units[] = {
        { "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "µs", 1e-6 }, { "ns", 1e-9 },
    };
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
        if (strcmp(end, units[k].unit) == 0) {
            *out = v * units[k].scale;
            return 0;
        }
    return -1;
}

/* Virtual seconds the playhead moves per wall second. */
static double speed_of(const rl_tui_state *s, const rl_tui_model *m)
{
    return (m->t_max - m->t_min) / PLAY_SECONDS * pow(2, s->speed_exp);
}

static void seek(rl_tui_state *s, const rl_tui_model *m, double t)
{
    s->play_on = 1;
    s->playhead = t < m->t_min ? m->t_min : t > m->t_max ? m->t_max : t;
}

void rl_tui_play_advance(rl_tui_state *s, const rl_tui_model *m, double wall_s)
{
    if (!s->play_on || !s->playing || wall_s <= 0)
        return;
    seek(s, m, s->playhead + wall_s * speed_of(s, m));
    if (s->playhead >= m->t_max)
        s->playing = 0;
}

int rl_tui_play_key(rl_tui_state *s, const rl_tui_model *m, int key)
{
    if (s->prompting) { /* g: typing a time */
        size_t n = strlen(s->prompt);
        if ((key == RL_KEY_ENTER || key == '\n' || key == '\r') && s->prompting == '/') {
            snprintf(s->search, sizeof s->search, "%s", s->prompt);
            s->prompting = 0;
            rl_tui_timeline_search(s, m, 1);
        } else if (key == RL_KEY_ENTER || key == '\n' || key == '\r') {
            double t;
            if (rl_tui_parse_time(s->prompt, &t) == 0)
                seek(s, m, t), s->playing = 0, s->prompt_bad = 0;
            else
                s->prompt_bad = 1;
            s->prompting = 0;
        } else if (key == RL_KEY_ESC) {
            s->prompting = 0;
        } else if (key == RL_KEY_BACKSPACE || key == 127 || key == 8) {
            if (n)
                s->prompt[n - 1] = 0;
        } else if (key > ' ' && key < 127 && n + 1 < sizeof s->prompt) {
            s->prompt[n] = (char)key, s->prompt[n + 1] = 0;
        }
        return 1;
    }
    double here = s->play_on ? s->playhead : m->t_min;
    switch (key) {
    case ' ':
        if (!s->play_on || s->playhead >= m->t_max)
            seek(s, m, m->t_min), s->playing = 1;
        else
            s->playing = !s->playing;
        return 1;
    case ']': case '[':
        seek(s, m, rl_tui_time_step(m->bounds, m->nbounds, here, key == ']' ? 1 : -1));
        s->playing = 0;
        return 1;
    case '}': case '{':
        seek(s, m, rl_tui_time_step(m->ops, m->nops, here, key == '}' ? 1 : -1));
        s->playing = 0;
        return 1;
    case '>':
        if (s->speed_exp < 10)
            s->speed_exp++;
        return 1;
    case '<':
        if (s->speed_exp > -10)
            s->speed_exp--;
        return 1;
    case 'g':
        s->prompting = 'g', s->prompt[0] = 0, s->prompt_bad = 0;
        return 1;
    case 'x':
        s->play_on = s->playing = 0;
        return 1;
    default:
        return 0;
    }
}

void rl_tui_play_marks(rl_canvas *c, int x0, int y0, int y1, int w, double t0, double t1, const rl_tui_state *s)
{
    if (!s->play_on || !(t1 > t0) || w < 1)
        return;
    double col = (s->playhead - t0) / (t1 - t0) * w;
    int px = (int)floor(col);
    for (int y = y0; y < y1; y++)
        for (int x = px + 1 > 0 ? px + 1 : 0; x < w; x++) {
            rl_cell *cell = rl_canvas_cell(c, x0 + x, y);
            if (cell) /* what has not happened yet, dimmed */
                cell->style = RL_STYLE(RL_COLOR_GREY, RL_COLOR_DEFAULT, RL_ATTR_DIM);
        }
    if (px < 0 || px >= w)
        return;
    for (int y = y0; y < y1; y++) {
        rl_cell *cell = rl_canvas_cell(c, x0 + px, y);
        if (!cell)
            continue;
        cell->cp = RL_G_VLINE.cp, cell->ascii = RL_G_VLINE.ascii;
        cell->style = RL_STYLE(RL_COLOR_BLACK, RL_COLOR_BRIGHT_YELLOW, RL_ATTR_BOLD);
    }
}

void rl_tui_play_status(char *buf, size_t n, const rl_tui_model *m, const rl_tui_state *s)
{
    char a[32];
    if (s->prompting == '/')
        snprintf(buf, n, " search event names: %s_  Enter find · Esc cancel ", s->prompt);
    else if (s->prompting)
        snprintf(buf, n, " go to time (e.g. 1.5ms, 250us): %s_  Enter go · Esc cancel ", s->prompt);
    else if (s->search_miss)
        snprintf(buf, n, " no event's name contains '%s' · ", s->search);
    else if (!s->play_on)
        snprintf(buf, n, "%s", s->prompt_bad ? " not a time: give e.g. 1.5ms, 250us or 0.002 (seconds) · " : "");
    else
        snprintf(buf, n, " %s at %s ×%g ·", s->playhead >= m->t_max ? "end" : s->playing ? "playing" : "paused",
                 rl_tui_fmt_time(s->playhead, a, sizeof a), pow(2, s->speed_exp));
}

/* ------------------------------------------------------------------ narration */

/* The longest event of a rank's stream covering t (an op, not its sub-ops) of the categories
 * in mask (bits of rl_cat); NULL when none. */
static const rl_trace_event *event_at(const rl_tui_model *m, int rank, int stream, double t, unsigned mask)
{
    if (rank < 0 || 2 * rank + stream >= m->nlanes)
        return NULL;
    const rl_tui_lane *l = &m->lanes[2 * rank + stream];
    size_t k = rl_tui_lane_first_start_at(l, t);
    while (k < l->n && l->spans[k].start <= t)
        k++;
    const rl_tui_span *best = NULL;
    for (size_t i = k; i-- > 0;) {
        if (l->maxend[i] <= t)
            break;
        const rl_tui_span *sp = &l->spans[i];
        if (sp->end > t && (mask & (1u << sp->cat)) && (!best || sp->end - sp->start > best->end - best->start))
            best = sp;
    }
    return best ? &m->trace->ev[best->ev] : NULL;
}

/* "F3", "B0.1" (chunk 1 of an interleaved schedule), "F" */
static void op_label(const rl_tui_model *m, const rl_trace_event *e, char *buf, size_t n)
{
    int mb = e->tags[RL_TAG_MICROBATCH], ch = e->tags[RL_TAG_CHUNK];
    if (mb < 0)
        snprintf(buf, n, "%c", e->phase);
    else if (ch >= 0 && m->nchunks > 1)
        snprintf(buf, n, "%c%d.%d", e->phase, mb, ch);
    else
        snprintf(buf, n, "%c%d", e->phase, mb);
}

/* Appends one clause to the narration, "; " between clauses. */
static void clause(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void clause(char *out, size_t n, const char *fmt, ...)
{
    size_t k = strlen(out);
    if (k + 3 >= n)
        return;
    if (k)
        k += (size_t)snprintf(out + k, n - k, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + k, n - k, fmt, ap);
    va_end(ap);
}

/* The messages a stage's rank is sending or receiving at t: "receives act from stage 0 and
 * sends grad(mb 2) to stage 1" (activations flow to higher stages, gradients back). */
static void messages_at(const rl_tui_model *m, int rank, int st, double t, char *out, size_t n)
{
    const rl_tui_lane *l = &m->lanes[2 * rank + 1];
    size_t k = rl_tui_lane_first_start_at(l, t);
    while (k < l->n && l->spans[k].start <= t)
        k++;
    out[0] = 0;
    for (size_t i = 0; i < k; i++) { /* oldest first, so a receive posted before a send reads first */
        const rl_tui_span *sp = &l->spans[i];
        const rl_trace_event *e = &m->trace->ev[sp->ev];
        if (sp->cat != RL_CAT_P2P || sp->end <= t || e->peer < 0 || e->peer >= m->trace->nranks ||
            m->stage_of[e->peer] < 0)
            continue;
        int ps = m->stage_of[e->peer], recv = strstr(e->name, "recv") != NULL;
        int act = recv ? ps < st : ps > st;
        char mb[24] = "";
        if (e->tags[RL_TAG_MICROBATCH] >= 0)
            snprintf(mb, sizeof mb, "(mb %d)", e->tags[RL_TAG_MICROBATCH]);
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s %s%s %s stage %d", used ? " and " : "", recv ? "receives" : "sends",
                 act ? "act" : "grad", mb, recv ? "from" : "to", ps);
    }
}

/* A pipeline: per stage (its lowest rank), the op it runs, the messages it sends or receives, or
 * that it idles. */
static void narrate_stages(const rl_tui_model *m, double t, char *out, size_t n)
{
    for (int st = 0; st < m->nstages; st++) {
        int r = m->stage_rank[st];
        if (r < 0)
            continue;
        const rl_trace_event *op = event_at(m, r, 0, t, 1u << RL_CAT_COMPUTE);
        if (op && !op->phase)
            op = NULL;
        char lab[24], what[256];
        messages_at(m, r, st, t, what, sizeof what);
        if (op) {
            op_label(m, op, lab, sizeof lab);
            clause(out, n, "stage %d runs %s%s%s", st, lab, what[0] ? " and " : "", what);
        } else if (what[0]) {
            clause(out, n, "stage %d %s", st, what);
        } else {
            clause(out, n, "stage %d idle (bubble)", st);
        }
    }
}

/* Any other run: what one rank computes and which collective its comm stream runs. */
static void narrate_rank(const rl_tui_model *m, int rank, double t, char *out, size_t n)
{
    char by[32];
    const rl_trace_event *op = event_at(m, rank, 0, t, 1u << RL_CAT_COMPUTE);
    const rl_trace_event *wait = op ? NULL : event_at(m, rank, 0, t, 1u << RL_CAT_IDLE);
    const rl_trace_event *coll = event_at(m, rank, 1, t, (1u << RL_CAT_COMM) | (1u << RL_CAT_P2P));
    if (op) {
        char tags[64] = "";
        size_t k = 0;
        if (op->phase)
            k += (size_t)snprintf(tags + k, sizeof tags - k, ", %s", op->phase == 'F' ? "forward" : op->phase == 'B' ?
                                  "backward" : "weight grad");
        if (op->tags[RL_TAG_STEP] >= 0 && k < sizeof tags)
            k += (size_t)snprintf(tags + k, sizeof tags - k, ", step %d", op->tags[RL_TAG_STEP]);
        if (op->tags[RL_TAG_LAYER] >= 0 && k < sizeof tags)
            k += (size_t)snprintf(tags + k, sizeof tags - k, ", layer %d", op->tags[RL_TAG_LAYER]);
        if (op->tags[RL_TAG_MICROBATCH] >= 0 && k < sizeof tags)
            snprintf(tags + k, sizeof tags - k, ", mb %d", op->tags[RL_TAG_MICROBATCH]);
        clause(out, n, "rank %d computes %s%s%s%s", rank, op->name, tags[0] ? " (" : "", tags[0] ? tags + 2 : "",
               tags[0] ? ")" : "");
    } else if (wait) {
        clause(out, n, "rank %d waits (%s)", rank, wait->name);
    } else {
        clause(out, n, "rank %d computes nothing", rank);
    }
    if (coll) {
        char b[32] = "";
        if (coll->tags[RL_TAG_BUCKET] >= 0)
            snprintf(b, sizeof b, " of bucket %d", coll->tags[RL_TAG_BUCKET]);
        double done = coll->vend > coll->vstart ? (t - coll->vstart) / (coll->vend - coll->vstart) : 1;
        clause(out, n, "its %s%s (%s sent on %s) is %.0f%% done, %s", coll->name, b,
               rl_tui_fmt_bytes(coll->bytes, by, sizeof by), coll->comm[0] ? coll->comm : "?", 100 * done,
               op ? "hidden under compute" : "exposed: nothing computes meanwhile");
    } else {
        clause(out, n, "no collective runs");
    }
    /* DDP's buckets: how many of the step's all-reduces have started by t */
    const rl_trace_event *any = op ? op : wait ? wait : coll;
    int step = any ? any->tags[RL_TAG_STEP] : -1, seen[64] = { 0 }, started = 0, total = 0;
    const rl_tui_lane *l = &m->lanes[2 * rank + 1];
    for (size_t i = 0; step >= 0 && i < l->n; i++) {
        const rl_trace_event *e = &m->trace->ev[l->spans[i].ev];
        int b = e->tags[RL_TAG_BUCKET];
        if (e->tags[RL_TAG_STEP] != step || b < 0 || b >= 64 || seen[b])
            continue;
        seen[b] = 1, total++;
        started += e->vstart <= t;
    }
    if (total)
        clause(out, n, "step %d: %d of its %d buckets launched", step, started, total);
}

int rl_tui_narrate(const rl_tui_model *m, const rl_tui_state *s, char *out, size_t n)
{
    char at[32], body[1024] = "";
    double t = s->playhead;
    if (m->nstages > 1)
        narrate_stages(m, t, body, sizeof body);
    else
        narrate_rank(m, s->lane / 2 < m->trace->nranks ? s->lane / 2 : 0, t, body, sizeof body);
    return snprintf(out, n, "at %s: %s.", rl_tui_fmt_time(t, at, sizeof at), body);
}

int rl_tui_draw_narration(rl_canvas *c, int y, int maxlines, const rl_tui_model *m, const rl_tui_state *s)
{
    if (!s->play_on || maxlines < 1)
        return 0;
    char text[1200];
    rl_tui_narrate(m, s, text, sizeof text);
    /* word-wrapped into at most maxlines lines of the canvas width */
    int w = c->w - 2, lines = 0;
    const char *p = text;
    while (*p && lines < maxlines) {
        int len = (int)strlen(p), cut = len;
        if (rl_canvas_text_width(p) > w) {
            cut = 0;
            for (int i = 0, cols = 0; p[i] && cols <= w; i++) {
                if ((p[i] & 0xC0) != 0x80)
                    cols++;
                if (p[i] == ' ' && cols <= w)
                    cut = i;
            }
            if (cut == 0)
                cut = w;
        }
        char line[1200];
        snprintf(line, sizeof line, "%.*s", cut, p);
        rl_canvas_text(c, 1, y + lines, w, RL_STYLE(RL_COLOR_BRIGHT_WHITE, RL_COLOR_DEFAULT, 0), line);
        lines++;
        p += cut;
        while (*p == ' ')
            p++;
    }
    return lines;
}
