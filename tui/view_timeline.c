/* view_timeline.c — one lane per rank x stream, boxes by category over virtual time, with
 * zoom, pan, a cursor and the share of comm hidden behind compute in the window. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "views.h"

/* Timeline rows besides the lanes: axis, cursor marker, event line, window line, legend. */
enum { FIXED_ROWS = 5 };

/* The window shown (the whole run when following). */
static void window_of(const rl_tui_state *s, const rl_tui_model *m, double *t0, double *t1)
{
    if (s->follow || !(s->t1 > s->t0)) {
        *t0 = m->t_min;
        *t1 = m->t_max;
    } else {
        *t0 = s->t0;
        *t1 = s->t1;
    }
}

static int cursor_col(const rl_tui_state *s, int plot_w)
{
    if (s->cursor_col < 0)
        return plot_w / 2;
    return s->cursor_col < plot_w ? s->cursor_col : plot_w - 1;
}

/* Sets the window to [t0, t0 + w) kept inside the run; the whole run means follow. */
static void set_window(rl_tui_state *s, const rl_tui_model *m, double t0, double w)
{
    double total = m->t_max - m->t_min;
    double min_w = 1e-9 * (s->plot_w > 0 ? s->plot_w : 100);
    if (w >= total) {
        s->follow = 1;
        s->t0 = m->t_min;
        s->t1 = m->t_max;
        return;
    }
    if (w < min_w)
        w = min_w;
    if (t0 < m->t_min)
        t0 = m->t_min;
    if (t0 + w > m->t_max)
        t0 = m->t_max - w;
    s->follow = 0;
    s->t0 = t0;
    s->t1 = t0 + w;
}

void rl_tui_timeline_zoom(rl_tui_state *s, const rl_tui_model *m, double factor)
{
    double t0, t1;
    window_of(s, m, &t0, &t1);
    int pw = s->plot_w > 0 ? s->plot_w : 100;
    double frac = (cursor_col(s, pw) + 0.5) / pw;
    double tc = t0 + frac * (t1 - t0);
    double w = (t1 - t0) * factor;
    set_window(s, m, tc - frac * w, w);
}

void rl_tui_timeline_pan(rl_tui_state *s, const rl_tui_model *m, double fraction)
{
    double t0, t1;
    window_of(s, m, &t0, &t1);
    if (s->follow)
        return; /* the whole run is shown: nothing to pan to */
    set_window(s, m, t0 + fraction * (t1 - t0), t1 - t0);
}

static void place_cursor(rl_tui_state *s, const rl_tui_model *m, double t, double t_end);

void rl_tui_timeline_jump(rl_tui_state *s, const rl_tui_model *m, int dir)
{
    if (m->nlanes <= 0)
        return;
    const rl_tui_lane *l = &m->lanes[s->lane < 0 ? 0 : s->lane >= m->nlanes ? m->nlanes - 1 : s->lane];
    double t0, t1;
    window_of(s, m, &t0, &t1);
    int pw = s->plot_w > 0 ? s->plot_w : 100, cc = cursor_col(s, pw);
    double dt = (t1 - t0) / pw, lo = t0 + cc * dt, hi = lo + dt; /* the cursor's column */
    /* next: the first span starting after the cursor's column; previous: the last one starting
     * before the event under the cursor (or before the column, if none is under it) */
    const rl_tui_span *cur = rl_tui_lane_at(l, lo + dt / 2);
    double edge = dir > 0 ? hi : cur && cur->start < lo ? cur->start : lo;
    size_t a = 0, b = l->n; /* the spans starting before edge: [0, a) */
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (l->spans[mid].start < edge)
            a = mid + 1;
        else
            b = mid;
    }
    if (dir > 0 ? a >= l->n : a == 0)
        return;
    size_t k = dir > 0 ? a : a - 1;
    place_cursor(s, m, l->spans[k].start, l->spans[k].end);
}

/* Whether name contains text, letter case aside. */
static int name_has(const char *name, const char *text)
{
    size_t n = strlen(text);
    for (const char *p = name; *p; p++)
        if (strncasecmp(p, text, n) == 0)
            return 1;
    return 0;
}

/* Orders two (time, lane, event) positions: -1, 0 or 1. */
static int pos_cmp(double ta, int la, long ia, double tb, int lb, long ib)
{
    return ta < tb ? -1 : ta > tb ? 1 : la != lb ? (la > lb) - (la < lb) : (ia > ib) - (ia < ib);
}

void rl_tui_timeline_search(rl_tui_state *s, const rl_tui_model *m, int dir)
{
    const rl_trace *t = m->trace;
    s->search_miss = 0;
    if (!s->search[0] || m->nlanes <= 0)
        return;
    double t0, t1;
    window_of(s, m, &t0, &t1);
    int pw = s->plot_w > 0 ? s->plot_w : 100;
    double dt = (t1 - t0) / pw, lo = t0 + cursor_col(s, pw) * dt, hi = lo + dt;
    /* events ordered by (start, lane, index): the first match after the cursor's position for dir > 0,
     * the last one before it for dir < 0; past either end the search wraps around. The position
     * is the last match's while the cursor is still on it, else the cursor's column (events
     * starting in it count as at its start) */
    const rl_trace_event *last = s->search_ev >= 0 && (size_t)s->search_ev < t->n ? &t->ev[s->search_ev] : NULL;
    int exact = last && 2 * last->rank + last->stream == s->lane && last->vstart < hi && last->vend > lo;
    double ref = exact ? last->vstart : lo;
    long ref_i = exact ? s->search_ev : dir > 0 ? LONG_MAX : -1; /* (a column: every event in it is at it) */
    long best = -1, wrap = -1;
    double bt = 0, wt = 0;
    int bl = 0, wl = 0;
    for (size_t i = 0; i < t->n; i++) {
        const rl_trace_event *e = &t->ev[i];
        int lane = 2 * e->rank + e->stream;
        if (lane >= m->nlanes || !name_has(e->name, s->search))
            continue;
        double at = !exact && e->vstart >= lo && e->vstart < hi ? lo : e->vstart;
        long ix = (long)i;
        int ahead = pos_cmp(at, lane, ix, ref, s->lane, ref_i) * dir > 0;
        if (ahead && (best < 0 || pos_cmp(at, lane, ix, bt, bl, best) * dir < 0))
            best = ix, bt = at, bl = lane;
        if (wrap < 0 || pos_cmp(at, lane, ix, wt, wl, wrap) * dir < 0)
            wrap = ix, wt = at, wl = lane;
    }
    long k = best >= 0 ? best : wrap;
    if (k < 0) {
        s->search_miss = 1;
        return;
    }
    const rl_trace_event *e = &t->ev[k];
    s->search_ev = k;
    s->lane = 2 * e->rank + e->stream;
    if (s->play_on) /* (the details follow the playhead while it is shown) */
        s->playhead = e->vstart, s->playing = 0;
    place_cursor(s, m, e->vstart, e->vend);
}

/* Puts the cursor on the first column of an event [start, end), panning when it is off the
 * window. */
static void place_cursor(rl_tui_state *s, const rl_tui_model *m, double t, double t_end)
{
    double t0, t1;
    window_of(s, m, &t0, &t1);
    int pw = s->plot_w > 0 ? s->plot_w : 100;
    double dt = (t1 - t0) / pw;
    if (t < t0 || t >= t1) { /* off the window: bring it to the middle */
        set_window(s, m, t - (t1 - t0) / 2, t1 - t0);
        window_of(s, m, &t0, &t1);
        dt = (t1 - t0) / pw;
    }
    double x = (t - t0) / dt, end = (t_end - t0) / dt;
    int col = (int)ceil(x - 0.5); /* the first column whose middle (where the details look) is in it */
    col = col + 0.5 > end && x < end ? (int)x : col; /* (an event narrower than half a column) */
    s->cursor_col = col < 0 ? 0 : col >= pw ? pw - 1 : col;
}

/* An event's colour: its category's; a bucket's colour, else its communicator role's (the mesh
 * view's colour of that dim), for comm events. e may be NULL. */
static rl_style event_style(const rl_tui_model *m, const rl_trace_event *e, rl_cat cat)
{
    int bucket = e ? e->tags[RL_TAG_BUCKET] : -1;
    rl_style st = rl_tui_cat_style(cat, bucket);
    int role = e && bucket < 0 && (cat == RL_CAT_COMM || cat == RL_CAT_P2P) && e->role[0]
                   ? rl_tui_role_color(m->trace, e->role) : -1;
    if (role >= 0)
        st.fg = (uint8_t)role;
    return st;
}

/* The legend of the colours comm events take besides their category's: the communicators'
 * roles ("tp dp", each in its colour) and the buckets ("buckets 0 1 2 ..."). Returns the
 * column after it. */
static int draw_legend(rl_canvas *c, int x, int y, const rl_tui_model *m)
{
    if (m->nroles) {
        x += rl_canvas_text(c, x, y, -1, RL_TUI_DIM, "│ roles ");
        for (int k = 0; k < m->nroles; k++) {
            rl_style st = RL_STYLE(rl_tui_role_color(m->trace, m->roles[k]), RL_COLOR_DEFAULT, RL_ATTR_BOLD);
            x += rl_canvas_text(c, x, y, -1, st, m->roles[k]) + 1;
        }
    }
    if (m->nbuckets) {
        x += rl_canvas_text(c, x, y, -1, RL_TUI_DIM, "│ buckets ");
        for (int b = 0; b < m->nbuckets && b < 10; b++) {
            char num[4];
            snprintf(num, sizeof num, "%d", b);
            x += rl_canvas_text(c, x, y, -1, rl_tui_cat_style(RL_CAT_COMM, b), num) + 1;
        }
        if (m->nbuckets > 10)
            x += rl_canvas_text(c, x, y, -1, RL_TUI_DIM, "…") + 1;
    }
    return x;
}

/* A box label: long ("all_reduce b2") when it fits in width columns, else short ("b2"). */
static const char *event_label(const rl_trace_event *e, char *buf, size_t n, int width)
{
    char tag[24] = "";
    if (e->tags[RL_TAG_BUCKET] >= 0)
        snprintf(tag, sizeof tag, "b%d", e->tags[RL_TAG_BUCKET]);
    else if (e->phase && e->tags[RL_TAG_MICROBATCH] >= 0)
        snprintf(tag, sizeof tag, "%c%d", e->phase, e->tags[RL_TAG_MICROBATCH]);
    else if (e->tags[RL_TAG_MICROBATCH] >= 0)
        snprintf(tag, sizeof tag, "mb%d", e->tags[RL_TAG_MICROBATCH]);
    else if (e->tags[RL_TAG_CHUNK] >= 0)
        snprintf(tag, sizeof tag, "c%d", e->tags[RL_TAG_CHUNK]);
    else if (e->role[0])
        snprintf(tag, sizeof tag, "%s", e->role);
    snprintf(buf, n, "%s%s%s", e->name, tag[0] ? " " : "", tag);
    if (rl_canvas_text_width(buf) <= width)
        return buf;
    if (tag[0] && (int)strlen(tag) <= width) {
        snprintf(buf, n, "%s", tag);
        return buf;
    }
    return NULL;
}

static void draw_lane(rl_canvas *c, int x0, int y, int w, const rl_tui_model *m, const rl_tui_lane *l,
                      double t0, double t1)
{
    double dt = (t1 - t0) / w, cov[RL_TUI_NLANECATS];
    for (int x = 0; x < w; x++) {
        double a = t0 + x * dt, b = a + dt;
        rl_tui_lane_coverage(l, a, b, cov);
        int dom = -1;
        for (int k = 0; k < RL_TUI_NLANECATS; k++)
            if (cov[k] > 0 && (dom < 0 || cov[k] > cov[dom]))
                dom = k;
        if (dom < 0)
            continue;
        const rl_tui_span *rep = rl_tui_lane_at(l, (a + b) / 2);
        const rl_trace_event *re = rep && rep->cat == dom ? &m->trace->ev[rep->ev] : NULL;
        rl_canvas_put(c, x0 + x, y, rl_tui_cat_glyph((rl_cat)dom), event_style(m, re, (rl_cat)dom));
    }
    /* labels, only when few enough events are visible for any to fit */
    size_t i0 = rl_tui_lane_first_after(l, t0), i1 = rl_tui_lane_first_start_at(l, t1);
    if (i1 <= i0 || i1 - i0 > (size_t)w)
        return;
    char buf[96];
    for (size_t i = i0; i < i1; i++) {
        const rl_tui_span *sp = &l->spans[i];
        int cx0 = (int)ceil((sp->start - t0) / dt), cx1 = (int)floor((sp->end - t0) / dt);
        if (cx0 < 0)
            cx0 = 0;
        if (cx1 > w)
            cx1 = w;
        int width = cx1 - cx0;
        if (width < 2)
            continue;
        const rl_trace_event *e = &m->trace->ev[sp->ev];
        const char *lab = event_label(e, buf, sizeof buf, width - 1);
        if (!lab)
            continue;
        rl_style st = event_style(m, e, e->cat);
        st = RL_STYLE(RL_COLOR_BLACK, st.fg, 0);
        rl_canvas_text(c, x0 + cx0 + (width - rl_canvas_text_width(lab)) / 2, y, width, st, lab);
    }
}

static void describe_event(char *buf, size_t n, const rl_trace_event *e)
{
    char st[32], du[32], by[32], fl[32], tags[128] = "";
    size_t k = 0;
    for (int t = 0; t < RL_NTAGS && k < sizeof tags; t++)
        if (e->tags[t] >= 0)
            k += (size_t)snprintf(tags + k, sizeof tags - k, " %s %d", rl_tag_name((rl_tag)t), e->tags[t]);
    if (e->phase && k < sizeof tags)
        k += (size_t)snprintf(tags + k, sizeof tags - k, " phase %c", e->phase);
    if (e->region && k < sizeof tags)
        k += (size_t)snprintf(tags + k, sizeof tags - k, " %s", e->region == 'F' ? "forward" : e->region == 'B'
                              ? "backward" : "optimizer");
    if (e->seq >= 0 && k < sizeof tags)
        snprintf(tags + k, sizeof tags - k, " seq %lld", (long long)e->seq);
    char where[64] = "", bw[32] = ""; /* the group and the peer; the rate a message moved at */
    int w = !e->comm[0] ? 0 : e->role[0] ? snprintf(where, sizeof where, " · group %s (%s)", e->role, e->comm)
                                         : snprintf(where, sizeof where, " · group %s", e->comm);
    if (e->peer >= 0)
        snprintf(where + w, sizeof where - (size_t)w, " · peer r%d", e->peer);
    double dur = e->vend - e->vstart;
    if ((e->cat == RL_CAT_COMM || e->cat == RL_CAT_P2P) && e->bytes > 0 && dur > 0)
        snprintf(bw, sizeof bw, " (%.3g GB/s)", e->bytes / dur / 1e9);
    snprintf(buf, n, "%s [%s%s]%s · start %s · dur %s · %s%s · %s", e->name, rl_cat_name(e->cat), tags, where,
             rl_tui_fmt_time(e->vstart, st, sizeof st), rl_tui_fmt_time(dur, du, sizeof du),
             rl_tui_fmt_bytes(e->bytes, by, sizeof by), bw, rl_tui_fmt_flops(e->flops, fl, sizeof fl));
}

/* The phase band of rank r over [t0, t1): per column the region (forward, backward, optimizer)
 * its compute ran in for most of the column, a letter where a run of one starts, a line after. */
static void draw_regions(rl_canvas *c, int x0, int y, int w, const rl_tui_model *m, int r, double t0, double t1)
{
    static const char regions[] = "FBO";
    static const uint8_t colors[3] = { RL_COLOR_GREEN, RL_COLOR_BRIGHT_CYAN, RL_COLOR_BRIGHT_MAGENTA };
    const rl_tui_lane *l = &m->lanes[2 * r];
    double dt = (t1 - t0) / w;
    int prev = -1;
    size_t i = rl_tui_lane_first_after(l, t0);
    for (int x = 0; x < w; x++) {
        double a = t0 + x * dt, b = a + dt, cov[3] = { 0, 0, 0 };
        while (i < l->n && l->spans[i].end <= a)
            i++;
        for (size_t k = i; k < l->n && l->spans[k].start < b; k++) {
            char rg = m->trace->ev[l->spans[k].ev].region;
            const char *p = rg ? strchr(regions, rg) : NULL;
            double lo = l->spans[k].start > a ? l->spans[k].start : a, hi = l->spans[k].end < b ? l->spans[k].end : b;
            if (p && hi > lo)
                cov[p - regions] += hi - lo;
        }
        int best = cov[0] > 0 || cov[1] > 0 || cov[2] > 0 ? (cov[1] > cov[0] ? 1 : 0) : -1;
        best = best >= 0 && cov[2] > cov[best] ? 2 : best;
        if (best >= 0) {
            rl_glyph g = best == prev ? RL_G_HLINE : RL_GLYPH(regions[best], regions[best]);
            rl_canvas_put(c, x0 + x, y, g, RL_STYLE(colors[best], RL_COLOR_DEFAULT, best == prev ? 0 : RL_ATTR_BOLD));
        }
        prev = best;
    }
}

void rl_tui_view_timeline(rl_canvas *c, int y0, int y1, const rl_tui_model *m, rl_tui_state *s)
{
    int nl = m->nlanes;
    char label[40], buf[512], a[32], b[32];
    snprintf(label, sizeof label, " r%d compute", m->trace->nranks - 1);
    int lw = (int)strlen(label) + 1;
    int plot_x = lw, plot_w = c->w - lw - 1;
    s->plot_w = plot_w;
    double t0, t1;
    window_of(s, m, &t0, &t1);
    s->t0 = t0;
    s->t1 = t1;
    if (m->trace->n == 0) {
        rl_canvas_text(c, 1, y0 + 1, -1, RL_TUI_HILITE, "This trace has no events yet.");
        return;
    }
    double dt = (t1 - t0) / plot_w;
    int cc = cursor_col(s, plot_w);
    double tc = t0 + (cc + 0.5) * dt;

    /* lanes that fit beside the narration, keeping the selected one in view */
    int narration = s->play_on ? (y1 - y0 - FIXED_ROWS > 4 ? 3 : 1) : 0;
    int band = m->has_regions && y1 - y0 - FIXED_ROWS - narration > 2; /* (the selected rank's phase band) */
    int nvis = y1 - y0 - FIXED_ROWS - narration - band;
    if (nvis < 1)
        nvis = 1;
    if (s->lane >= nl)
        s->lane = nl - 1;
    if (s->lane < 0)
        s->lane = 0;
    if (s->lane < s->lane_top)
        s->lane_top = s->lane;
    if (s->lane >= s->lane_top + nvis)
        s->lane_top = s->lane - nvis + 1;
    if (s->lane_top > nl - nvis)
        s->lane_top = nl - nvis > 0 ? nl - nvis : 0;

    int y = y0;
    s->plot_x = plot_x, s->lane_y = y0 + 1 + band, s->lane_rows = nvis;
    rl_tui_draw_axis(c, plot_x, y++, plot_w, t0, t1);
    if (band) {
        snprintf(label, sizeof label, " r%d phase", m->lanes[s->lane].rank);
        rl_canvas_text(c, 0, y, lw, RL_TUI_DIM, label);
        draw_regions(c, plot_x, y++, plot_w, m, m->lanes[s->lane].rank, t0, t1);
    }
    for (int li = s->lane_top; li < nl && li < s->lane_top + nvis; li++, y++) {
        const rl_tui_lane *l = &m->lanes[li];
        int sel = li == s->lane && !s->printed; /* (a printed chart has no selection, no cursor) */
        snprintf(label, sizeof label, "%cr%d %s", sel ? '>' : ' ', l->rank, l->stream ? "comm" : "compute");
        rl_canvas_text(c, 0, y, lw, sel ? RL_TUI_HILITE : RL_STYLE_PLAIN, label);
        draw_lane(c, plot_x, y, plot_w, m, l, t0, t1);
        rl_cell *cell = s->printed ? NULL : rl_canvas_cell(c, plot_x + cc, y);
        if (cell)
            cell->style.attr |= RL_ATTR_REVERSE;
    }
    rl_tui_play_marks(c, plot_x, y0 + 1, y, plot_w, t0, t1, s);
    if (s->lane_top + nvis < nl) { /* the last row's label says how many lanes are below */
        rl_canvas_fill(c, 0, y - 1, lw, 1, RL_G_SPACE, RL_TUI_DIM);
        rl_canvas_printf(c, 0, y - 1, lw, RL_TUI_DIM, " +%d more", nl - s->lane_top - nvis);
    }

    if (!s->printed) {
        rl_canvas_put(c, plot_x + cc, y, RL_G_UP, RL_TUI_HILITE);
        rl_tui_fmt_time(tc, a, sizeof a);
        snprintf(buf, sizeof buf, "cursor %s", a);
        int tw = rl_canvas_text_width(buf);
        rl_canvas_text(c, cc + 2 + tw <= plot_w ? plot_x + cc + 2 : plot_x + cc - 1 - tw, y, tw, RL_TUI_HILITE, buf);
    }
    y++;

    const rl_tui_lane *sel = &m->lanes[s->lane];
    double at = s->play_on ? s->playhead : tc; /* the details follow the playhead while it is shown */
    const rl_tui_span *sp = rl_tui_lane_at(sel, at);
    if (s->printed) {
        buf[0] = 0;
    } else if (sp) {
        char d[400];
        describe_event(d, sizeof d, &m->trace->ev[sp->ev]);
        snprintf(buf, sizeof buf, "r%d %s: %s", sel->rank, sel->stream ? "comm" : "compute", d);
    } else {
        snprintf(buf, sizeof buf, "r%d %s: no event at the %s", sel->rank, sel->stream ? "comm" : "compute",
                 s->play_on ? "playhead" : "cursor (, and . jump to the lane's events)");
    }
    rl_canvas_text(c, 1, y++, c->w - 2, RL_STYLE_PLAIN, buf);

    double hidden = rl_tui_comm_hidden(m, t0, t1);
    char hid[64];
    if (hidden < 0)
        snprintf(hid, sizeof hid, "comm hidden: - (no comm in window)");
    else
        snprintf(hid, sizeof hid, "comm hidden: %.0f%% (comm-stream time under compute)", 100 * hidden);
    snprintf(buf, sizeof buf, "window %s – %s (zoom x%.3g) · %s", rl_tui_fmt_time(t0, a, sizeof a),
             rl_tui_fmt_time(t1, b, sizeof b), (m->t_max - m->t_min) / (t1 - t0), hid);
    rl_canvas_text(c, 1, y, c->w - 2, RL_STYLE_PLAIN, buf);
    /* make the headline number stand out */
    const char *p = strstr(buf, "comm hidden");
    if (p) {
        int col = 1 + rl_canvas_text_width(buf) - rl_canvas_text_width(p);
        int hl = (int)(strchr(hid, '(') ? strchr(hid, '(') - hid : (long)strlen(hid));
        for (int k = 0; k < hl && col + k < c->w - 1; k++)
            rl_canvas_restyle(c, col + k, y, RL_TUI_HILITE);
    }
    y++;

    int x = 1;
    static const rl_cat cats[] = { RL_CAT_COMPUTE, RL_CAT_COMM, RL_CAT_P2P, RL_CAT_IDLE };
    for (int k = 0; k < 4; k++) {
        rl_canvas_put(c, x, y, rl_tui_cat_glyph(cats[k]), rl_tui_cat_style(cats[k], -1));
        x += 2 + rl_canvas_text(c, x + 2, y, -1, RL_STYLE_PLAIN, rl_cat_name(cats[k])) + 2;
    }
    x = draw_legend(c, x, y, m);
    if (!s->printed)
        rl_canvas_text(c, x, y, c->w - x - 1, RL_TUI_DIM, "│ +-/ws zoom  ←→/ad pan  ↑↓/jk lane  ,. event  0 whole run");
    rl_tui_draw_narration(c, y + 1, y1 - y - 1, m, s);
}
