/* cmd_view.c — `ringlab view`: replay a trace in the TUI, render a view as text, write a
 * synthetic trace, run a small live demo, or benchmark the timeline on 1,000,000 events. */
#include <errno.h>
#include <signal.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli/cli.h"
#include "pipeline.h"
#include "render_text.h"
#include "ringlab.h"
#include "optnum.h"
#include "synth.h"
#include "tui.h"
#include "views.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ringlab view FILE                         the interactive viewer (needs a terminal)\n"
            "       ringlab view FILE --render VIEW --size WxH [--ascii] [--at TIME]\n"
            "                                                 print one view as text and exit (--at: with\n"
            "                                                 the playhead at TIME, e.g. 1.5ms, and its narration)\n"
            "       ringlab view FILE --narrate --at TIME     print what happens at TIME (the narration)\n"
            "       ringlab view FILE --ticks                 print the pipeline schedule the run executed\n"
            "                                                 as a tick table (one op per tick, as PyTorch's\n"
            "                                                 schedule dump; F3.1: micro-batch 3, chunk 1)\n"
            "       ringlab view --synth ddp|gpipe|1f1b --out FILE [--ranks N] [--microbatches M]\n"
            "                                                 write a synthetic trace to look at\n"
            "       ringlab view --demo [--steps N] [--delay-ms MS] [common options, e.g. --tui --trace FILE]\n"
            "                                                 a small DDP run on the sim backend, shown live\n"
            "                                                 with --tui, else printed as a timeline chart\n"
            "       ringlab view --bench [--events N] [--frames K]\n"
            "                                                 trace load time, memory and timeline frame time\n"
            "VIEW: timeline pipeline shapes memory mesh. FILE: a Chrome trace-event JSON written by a\n"
            "ringlab run (--trace FILE). Keys in the viewer: 1-5 views, space play / pause, [ ] { } step,\n"
            "< > speed, g go to a time, ? help, q quit.\n");
}

/* "WxH" and nothing more: two whole numbers from 1 to 1000. */
static int parse_size(const char *s, int *w, int *h)
{
    char x;
    int used = -1;
    return s && isdigit((unsigned char)s[0]) && sscanf(s, "%4d%c%4d%n", w, &x, h, &used) == 3 && used >= 0 &&
           !s[used] && (x == 'x' || x == 'X') && isdigit((unsigned char)s[strcspn(s, "xX") + 1]) && *w > 0 &&
           *h > 0 && *w <= 1000 && *h <= 1000;
}

/* The end of the trace's last event, in virtual seconds (0 when it has none). */
static double trace_end(const rl_trace *t)
{
    double end = 0;
    for (size_t i = 0; i < t->n; i++)
        end = t->ev[i].vend > end ? t->ev[i].vend : end;
    return end;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double maxrss_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times `frames` draws of the timeline (plus the text render) and prints min/median/max. */
static void bench_frames(const char *what, rl_canvas *c, const rl_tui_model *m, rl_tui_state *s, int frames)
{
    double *ft = malloc((size_t)frames * sizeof *ft);
    if (!ft)
        return;
    for (int i = 0; i < frames; i++) {
        double t0 = now_s();
        rl_tui_draw(c, m, s);
        char *txt = rl_canvas_to_text(c, 0);
        ft[i] = now_s() - t0;
        free(txt);
    }
    qsort(ft, (size_t)frames, sizeof *ft, dbl_cmp);
    printf("  %-34s median %7.2f ms   min %7.2f ms   max %7.2f ms   (%d frames)\n", what, ft[frames / 2] * 1e3,
           ft[0] * 1e3, ft[frames - 1] * 1e3, frames);
    free(ft);
}

/* The second half of --bench, in a fresh process so that maxrss is the loader's own. */
static int bench_load(const char *path, int frames, int w, int h)
{
    char err[512];
    double rss0 = maxrss_mib(), t0 = now_s();
    rl_trace *t = rl_trace_read_json(path, err, sizeof err);
    double t1 = now_s();
    if (!t) {
        fprintf(stderr, "ringlab view --bench: %s\n", err);
        return RL_EXIT_FAIL;
    }
    double rss1 = maxrss_mib();
    rl_tui_model *m = rl_tui_model_new(t);
    double t2 = now_s();
    rl_canvas *c = rl_canvas_new(w, h);
    if (!m || !c) {
        fprintf(stderr, "ringlab view --bench: out of memory\n");
        return RL_EXIT_FAIL;
    }
    printf("load (rl_trace_read_json):    %8.2f s     %zu events\n", t1 - t0, t->n);
    printf("index (per lane, by start):   %8.3f s\n", t2 - t1);
    double idx = 0;
    for (int l = 0; l < m->nlanes; l++)
        idx += (double)m->lanes[l].n * (sizeof(rl_tui_span) + sizeof(double) * (1 + RL_TUI_NLANECATS));
    printf("index memory:                 %8.0f MiB  (spans, prefix max and prefix sums per lane)\n", idx / 1048576.0);
    printf("peak memory (maxrss):         %8.0f MiB  (before load %.0f MiB, after load %.0f MiB, with index %.0f MiB)\n",
           maxrss_mib(), rss0, rss1, maxrss_mib());
    printf("timeline frame at %dx%d (draw + text render):\n", w, h);
    rl_tui_state s;
    rl_tui_state_init(&s);
    char whole[64];
    snprintf(whole, sizeof whole, "whole run (%zu events in view)", t->n);
    bench_frames(whole, c, m, &s, frames);
    for (int i = 0; i < 6; i++)
        rl_tui_handle_key(&s, m, '+');
    bench_frames("zoom x64, middle of the run", c, m, &s, frames);
    for (int i = 0; i < 10; i++)
        rl_tui_handle_key(&s, m, '+');
    rl_tui_handle_key(&s, m, RL_KEY_HOME);
    bench_frames("zoom x65536, start (labels shown)", c, m, &s, frames);
    rl_canvas_free(c);
    rl_tui_model_free(m);
    rl_trace_free(t);
    return 0;
}

/* Generates and writes the trace (in a child process, so that this process's maxrss is
 * the loader's own), then loads and renders it here. */
static int bench(size_t n, int frames, int w, int h)
{
    /* about 400 bytes of memory per event while loading and indexing, 260 on disk */
    double need = 400.0 * (double)n, disk = 260.0 * (double)n, avail = rl_mem_available(); /* (ulimit -v too) */
    char path[64], b1[32], b2[32];
    struct statvfs fs;
    double room = statvfs("/tmp", &fs) == 0 ? (double)fs.f_bavail * (double)fs.f_frsize : -1;
    if ((avail >= 0 && need > avail) || (room >= 0 && disk > room)) {
        int mem = avail >= 0 && need > avail;
        fprintf(stderr, "ringlab view --bench: %s: %zu events need about %s %s and %s %s: use fewer --events\n",
                mem ? "out of memory" : "not enough disk space", n, rl_fmt_bytes(mem ? need : disk, b1, sizeof b1),
                mem ? "of memory" : "in /tmp", rl_fmt_bytes(mem ? avail : room, b2, sizeof b2),
                mem ? "is available" : "is free");
        return RL_EXIT_FAIL;
    }
    /* the file is unlinked at once and reached through the descriptor: nothing is left in /tmp
     * when the bench ends, fails or is stopped by Ctrl-C */
    snprintf(path, sizeof path, "/tmp/ringlab-view-bench-%d.json", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        fprintf(stderr, "ringlab view --bench: cannot create '%s': %s\n", path, strerror(errno));
        return RL_EXIT_FAIL;
    }
    unlink(path);
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    printf("ringlab view --bench: %zu events, timeline at %dx%d\n", n, w, h);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "ringlab view --bench: fork failed: %s\n", strerror(errno));
        close(fd);
        return RL_EXIT_FAIL;
    }
    if (pid == 0) {
        double t0 = now_s();
        rl_trace *t = rl_tui_synth_big(n);
        if (!t) {
            fprintf(stderr, "ringlab view --bench: out of memory\n");
            _exit(1);
        }
        double t1 = now_s();
        char err[512];
        int rc = rl_trace_write_json(t, path, 0, err, sizeof err);
        double t2 = now_s();
        if (rc) {
            fprintf(stderr, "ringlab view --bench: %s\n", err);
            _exit(1);
        }
        FILE *f = fopen(path, "rb");
        long size = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            size = ftell(f);
            fclose(f);
        }
        printf("generate:                     %8.2f s     %zu events\n", t1 - t0, t->n);
        printf("write (rl_trace_write_json):  %8.2f s     %.1f MiB file (temporary, already unlinked)\n", t2 - t1,
               size / 1048576.0);
        fflush(stdout);
        _exit(0);
    }
    int status = 1;
    waitpid(pid, &status, 0);
    int rc = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? bench_load(path, frames, w, h) : RL_EXIT_FAIL;
    close(fd);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGPIPE) /* the reader went away: end as the child did */
        raise(SIGPIPE);
    return rc;
}

/* ---- the live demo: a small DDP step on the sim backend ---- */

typedef struct {
    int steps, delay_ms;
} demo_cfg;

static int demo_rank(rl_ctx *ctx, void *arg)
{
    enum { L = 4 };
    const demo_cfg *cfg = arg;
    rl_comm *world = rl_comm_world(ctx);
    int n = rl_world_size(ctx);
    if (rl_rank(ctx) == 0) {
        const char *names[] = { "dp" };
        rl_ctx_set_mesh(ctx, 1, names, &n);
        rl_ctx_set_meta(ctx, "demo", "DDP, 4 layers, one bucket per layer");
    }
    const int64_t h = 1024, b = 64;
    rl_tensor *grad[L] = { 0 };
    int rc = 0;
    for (int l = 0; l < L && !rc; l++)
        if (!(grad[l] = rl_tensor_new_1d(ctx, "grad", RL_BF16, RL_MEM_GRAD, h * h)))
            rc = RL_ERR_NOMEM;
    rl_tensor *w = rl_tensor_new_1d(ctx, "weights", RL_BF16, RL_MEM_PARAM, L * h * h);
    rl_tensor *opt = rl_tensor_new_1d(ctx, "adam", RL_F32, RL_MEM_OPTIM, 3 * L * h * h);
    char shapes[160];
    snprintf(shapes, sizeof shapes, "x[b=%lld,h=%lld] w[h=%lld,h=%lld] -> y[b=%lld,h=%lld]", (long long)b,
             (long long)h, (long long)h, (long long)h, (long long)b, (long long)h);
    for (int s = 0; s < cfg->steps && !rc; s++) {
        rl_step_begin(ctx, s);
        for (int l = 0; l < L; l++) {
            rl_set_tag(ctx, RL_TAG_LAYER, l);
            rl_compute_record(ctx, "linear_fwd", RL_BF16, 2.0 * b * h * h, 2.0 * (h * h + 2 * b * h), shapes,
                              rl_wall_now(ctx));
        }
        rl_work *works[L] = { 0 };
        for (int l = L - 1; l >= 0 && !rc; l--) {
            rl_set_tag(ctx, RL_TAG_LAYER, l);
            rl_compute_record(ctx, "linear_bwd", RL_BF16, 4.0 * b * h * h, 4.0 * (h * h + 2 * b * h), shapes,
                              rl_wall_now(ctx));
            rl_set_tag(ctx, RL_TAG_BUCKET, L - 1 - l);
            works[l] = rl_all_reduce(world, grad[l], grad[l], RL_SUM, RL_ASYNC);
            rl_set_tag(ctx, RL_TAG_BUCKET, -1);
            if (!works[l])
                rc = RL_ERR_ABORTED;
        }
        rl_set_tag(ctx, RL_TAG_LAYER, -1);
        for (int l = 0; l < L; l++)
            if (works[l] && rl_wait(works[l]) && !rc)
                rc = RL_ERR_ABORTED;
        rl_compute_record(ctx, "adam_step", RL_F32, 10.0 * L * h * h, 16.0 * L * h * h, NULL, rl_wall_now(ctx));
        rl_step_end(ctx);
        if (cfg->delay_ms > 0)
            usleep((useconds_t)cfg->delay_ms * 1000);
    }
    for (int l = 0; l < L; l++)
        rl_tensor_free(grad[l]);
    rl_tensor_free(w);
    rl_tensor_free(opt);
    return rc;
}

static int demo(int argc, char **argv)
{
    rl_opts o;
    rl_opts_init(&o);
    char err[256];
    if (rl_opts_parse(&o, &argc, argv, err, sizeof err)) {
        fprintf(stderr, "ringlab view --demo: %s\n", err);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    static const rl_optnum_decl nums[] = { { "--steps", 1, 10000, 1 }, { "--delay-ms", 0, 60000, 1 } };
    demo_cfg cfg = { 8, -1 };
    for (int i = 0; i < argc; i++) {
        double v;
        int k;
        if (rl_opts_list_numbers(argv[i], nums, 2)) {
            return RL_EXIT_OK;
        } else if ((k = rl_optnum_find(nums, 2, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &v, err, sizeof err)) !=
                   -1) {
            if (k == -2) {
                fprintf(stderr, "ringlab view --demo: %s\n", err);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            *(k == 0 ? &cfg.steps : &cfg.delay_ms) = (int)v;
            i++;
        } else if (strcmp(argv[i], "--demo") != 0 && strcmp(argv[i], "view") != 0) {
            fprintf(stderr, "ringlab view --demo: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
    }
    if (cfg.delay_ms < 0)
        cfg.delay_ms = o.tui ? 300 : 0;
    rl_trace *t = NULL;
    int rc = o.tui ? rl_tui_run_live(&o, demo_rank, &cfg, &t) : rl_launch(&o, demo_rank, &cfg, &t);
    if (!o.tui && t) {
        rl_tui_print_chart(t, RL_VIEW_TIMELINE, 7 + 2 * o.ranks < RL_TUI_MIN_H ? RL_TUI_MIN_H : 7 + 2 * o.ranks, stdout,
                           err, sizeof err);
    }
    rl_trace_free(t);
    return rl_exit_status(rc);
}

/* view's options that take a number (--demo's are its own). */
static const rl_optnum_decl view_numbers[] = {
    { "--events", 1000, 20000000, 1 }, { "--frames", 1, 10000, 1 }, { "--ranks", 1, 64, 1 }, { "--microbatches", 1, 256, 1 },
};
#define NVIEW_NUMBERS (int)(sizeof view_numbers / sizeof view_numbers[0])

int rl_cmd_view(int argc, char **argv)
{
    const char *file = NULL, *render = NULL, *size = NULL, *synth = NULL, *out = NULL, *bench_file = NULL;
    const char *at = NULL;
    int utf8 = 1, do_bench = 0, frames = 15, ranks = 4, mbs = 8, ticks = 0, narrate = 0, mbs_given = 0;
    long long events = 1000000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
        char verr[256];
        double num;
        int k;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--demo") == 0) {
            return demo(argc - 1, argv + 1);
        } else if (strcmp(a, "--ascii") == 0) {
            utf8 = 0;
        } else if (strcmp(a, "--bench") == 0) {
            do_bench = 1;
        } else if (strcmp(a, "--ticks") == 0) {
            ticks = 1;
        } else if (strcmp(a, "--narrate") == 0) {
            narrate = 1;
        } else if (next && strcmp(a, "--at") == 0) {
            at = argv[++i];
        } else if (next && strcmp(a, "--render") == 0) {
            render = argv[++i];
        } else if (next && strcmp(a, "--size") == 0) {
            size = argv[++i];
        } else if (strcmp(a, RL_OPTNUM_LIST_FLAG) == 0) {
            rl_optnum_list(stdout, view_numbers, NVIEW_NUMBERS);
            return RL_EXIT_OK;
        } else if ((k = rl_optnum_find(view_numbers, NVIEW_NUMBERS, a, next, &num, verr, sizeof verr)) != -1) {
            if (k == -2) {
                fprintf(stderr, "ringlab view: %s\n", verr);
                usage(stderr);
                return RL_EXIT_USAGE;
            }
            if (k == 0)
                events = (long long)num;
            else
                *(k == 1 ? &frames : k == 2 ? &ranks : &mbs) = (int)num;
            mbs_given |= k == 3;
            i++;
        } else if (next && strcmp(a, "--synth") == 0) {
            synth = argv[++i];
        } else if (next && strcmp(a, "--out") == 0) {
            out = argv[++i];

        } else if (next && strcmp(a, "--bench-load") == 0) {
            bench_file = argv[++i];
        } else if (a[0] == '-' || file) {
            fprintf(stderr, "ringlab view: unexpected argument '%s' (or a missing value)\n", a);
            usage(stderr);
            return RL_EXIT_USAGE;
        } else {
            file = a;
        }
    }
    int w = 200, h = 60;
    if (size && parse_size(size, &w, &h) && render && (w < RL_TUI_MIN_W || h < RL_TUI_MIN_H)) {
        fprintf(stderr, "ringlab view: --size %dx%d is too small for a view: it needs %dx%d at least\n", w, h,
                RL_TUI_MIN_W, RL_TUI_MIN_H);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (size && !parse_size(size, &w, &h)) {
        fprintf(stderr, "ringlab view: --size '%s': give WIDTHxHEIGHT in cells, e.g. 120x40 (1 to 1000 each)\n", size);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (bench_file)
        return bench_load(bench_file, frames, w, h);
    if (do_bench)
        return bench((size_t)events, frames, w, h);
    if (synth && mbs_given && !strcmp(synth, "ddp")) {
        fprintf(stderr, "ringlab view --synth ddp: --microbatches applies to the pipeline traces (gpipe, 1f1b)\n");
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if (synth) {
        if (!out) {
            fprintf(stderr, "ringlab view --synth: give the output file with --out FILE\n");
            usage(stderr);
            return RL_EXIT_USAGE;
        }
        rl_trace *t = strcmp(synth, "ddp") == 0 && ranks >= 1 && ranks <= 64 ? rl_tui_synth_ddp(ranks, 3)
                      : strcmp(synth, "gpipe") == 0                           ? rl_tui_synth_pipeline(ranks, mbs, 0)
                      : strcmp(synth, "1f1b") == 0                            ? rl_tui_synth_pipeline(ranks, mbs, 1)
                                                                              : NULL;
        if (!t) {
            fprintf(stderr, "ringlab view --synth: '%s' with --ranks %d --microbatches %d: use ddp, gpipe or 1f1b, "
                            "1 to 64 ranks, 1 to 256 micro-batches\n", synth, ranks, mbs);
            usage(stderr);
            return RL_EXIT_USAGE;
        }
        char err[512];
        int rc = rl_trace_write_json(t, out, 0, err, sizeof err);
        rl_trace_free(t);
        if (rc) {
            fprintf(stderr, "ringlab view: %s\n", err);
            return RL_EXIT_FAIL;
        }
        printf("wrote %s (view it: build/ringlab view %s)\n", out, out);
        return 0;
    }
    if (!file) {
        fprintf(stderr, "ringlab view: give a trace file (written by a run with --trace FILE)\n");
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if ((narrate != 0) + (ticks != 0) + (render != NULL) > 1) { /* one output: say which, never drop one */
        fprintf(stderr, "ringlab view: %s%s%s: give one of them (each prints something else)\n",
                narrate ? "--narrate" : "", ticks ? (narrate ? ", --ticks" : "--ticks") : "",
                render ? ", --render" : "");
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    int view = RL_VIEW_TIMELINE;
    if (render && (view = rl_tui_view_parse(render)) < 0) {
        fprintf(stderr, "ringlab view: --render '%s': choose timeline, pipeline, shapes, memory or mesh\n", render);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    rl_tui_state st;
    rl_tui_state_init(&st);
    st.view = (rl_tui_view)view;
    st.title = file;
    if (at && rl_tui_parse_time(at, &st.playhead)) {
        fprintf(stderr, "ringlab view: --at '%s': give a time of the run, e.g. 1.5ms, 250us or 0.002 (seconds)\n", at);
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    if ((narrate || at) && !(narrate ? at != NULL : render != NULL)) {
        fprintf(stderr, "ringlab view: %s\n", narrate ? "--narrate needs --at TIME (the playhead)"
                                                       : "--at TIME goes with --render VIEW or --narrate");
        usage(stderr);
        return RL_EXIT_USAGE;
    }
    st.play_on = at != NULL;
    char err[512];
    rl_trace *t = rl_trace_read_json(file, err, sizeof err);
    if (!t) {
        fprintf(stderr, "ringlab view: %s\n", err);
        return RL_EXIT_FAIL;
    }
    double end = trace_end(t);
    if (at && st.playhead > end * (1 + 1e-9) + 1e-12) {
        char b2[32];
        fprintf(stderr, "ringlab view: --at %s is after the run's end (%s): give a time from 0 to %s\n", at,
                rl_tui_fmt_time(end, b2, sizeof b2), b2);
        rl_trace_free(t);
        return RL_EXIT_USAGE;
    }
    int rc;
    if (narrate) {
        rl_tui_model *m = rl_tui_model_new(t);
        char text[2048];
        if (m) {
            rl_tui_narrate(m, &st, text, sizeof text);
            for (char *p = text; *p; p++) /* names come from the file: no escape sequences to the terminal */
                if (((unsigned char)*p < 0x20 && *p != '\n') || *p == 0x7f)
                    *p = '?';
            printf("%s\n", text);
        }
        else
            fprintf(stderr, "ringlab view: out of memory\n");
        rl_tui_model_free(m);
        rc = m ? 0 : RL_EXIT_FAIL;
    } else if (ticks) {
        rc = rl_pp_print_trace_ticks(t, stdout, err, sizeof err);
        if (rc)
            fprintf(stderr, "ringlab view --ticks: %s\n", err);
        rc = rc ? RL_EXIT_FAIL : 0;
    } else if (render) {
        rc = rl_tui_render_state(t, &st, size ? w : 120, size ? h : 40, utf8, stdout, err, sizeof err);
        if (rc)
            fprintf(stderr, "ringlab view: %s\n", err);
        rc = rc ? RL_EXIT_FAIL : 0;
    } else {
        rc = rl_tui_replay(t, file);
    }
    if (t->skipped) /* (after the TUI, which would clear it from the screen) */
        fprintf(stderr, "ringlab view: note: %zu events of kinds ringlab does not draw (\"ph\" other than \"X\", "
                "\"C\" and \"M\") were left out\n", t->skipped);
    rl_trace_free(t);
    return rc;
}
