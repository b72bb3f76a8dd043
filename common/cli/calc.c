/* calc.c — `ringlab calc TOPIC`: the course's cost calculators on the command line. Each
 * topic prints its inputs, the formula it used and the result with units (GB = 1e9 bytes
 * and GiB = 2^30 bytes), or with --json one JSON object (keys in `calc TOPIC --help`).
 * The numbers come from common/calc.c, the same functions the graders call. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "calc.h"
#include "cli.h"
#include "optnum.h"
#include "launch.h"

/* ------------------------------------------------------------------ options */
typedef enum { O_COUNT, O_BYTES, O_INT, O_NUM, O_STR, O_FLAG } okind;

typedef struct {
    const char *name;   /* "--dp" */
    okind kind;
    int required;
    const char *what;   /* for "missing --dp N (the data-parallel degree)" */
    double num;         /* O_COUNT, O_BYTES, O_NUM, O_INT, O_FLAG */
    const char *str;    /* O_STR */
    int set;
    double min, max;    /* O_INT, O_NUM: the accepted range when max > 0 (else opt_range's default) */
} opt;

typedef struct topic topic;
struct topic {
    const char *name;
    const char *summary;
    const char *usage;   /* the option lines */
    const char *details; /* formula, model, JSON keys */
    int (*run)(const topic *tp, int argc, char **argv);
};

#define NOPT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void topic_usage(const topic *tp, FILE *f, int full)
{
    fprintf(f, "usage: ringlab calc %s %s\n", tp->name, tp->usage);
    if (full)
        fprintf(f, "\n%s\n%s", tp->summary, tp->details);
}

static void opt_range(const opt *op, double *min, double *max);

/* The topic's options, one a line, with what each means and the values it takes. */
static void options_help(const opt *o, int n)
{
    printf("\noptions:\n");
    for (int i = 0; i < n; i++) {
        double min, max;
        opt_range(&o[i], &min, &max);
        char range[96] = "";
        if (o[i].kind == O_INT || o[i].kind == O_COUNT || o[i].kind == O_BYTES)
            snprintf(range, sizeof range, "; a whole number%s from %g to %g", o[i].kind == O_BYTES ? " of bytes" : "",
                     min, max);
        else if (o[i].kind == O_NUM)
            snprintf(range, sizeof range, "; from %g to %g", min, max);
        printf("  %-14s %s%s%s\n", o[i].name, o[i].what, range, o[i].required ? " (required)" : "");
    }
    printf("  %-14s one JSON object instead of text\n", "--json");
}

static int usage_error(const topic *tp, const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "ringlab calc %s: ", tp->name);
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    topic_usage(tp, stderr, 0);
    fprintf(stderr, "(ringlab calc %s --help for the formula and the JSON keys)\n", tp->name);
    return RL_EXIT_USAGE;
}

static opt *find_opt(opt *o, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(o[i].name, name) == 0)
            return &o[i];
    return NULL;
}

static const rl_hw *hw_opt(const topic *tp, opt *o, int *rc)
{
    const char *name = o->set ? o->str : "h100-nvlink";
    const rl_hw *hw = rl_hw_find(name);
    if (!hw)
        *rc = usage_error(tp, "unknown hardware profile '%s'%s: use h100-nvlink, a100-pcie or h100-2node-ib", name, "");
    return hw;
}

/* An option's accepted range: its own, else a whole number from 1 to 1e9 (O_INT), a count
 * from 1 to 1e18, a whole number of bytes from 0 to 1e18, or a number from 0 to 1e18. */
static void opt_range(const opt *op, double *min, double *max)
{
    if (op->max > 0)
        *min = op->min, *max = op->max;
    else
        *min = op->kind == O_INT || op->kind == O_COUNT ? 1 : 0, *max = op->kind == O_INT ? 1e9 : 1e18;
}

/* The topic's options that take a number, for RL_OPTNUM_LIST_FLAG (counts and sizes as "size"). */
static void list_numeric(const opt *o, int n)
{
    for (int i = 0; i < n; i++) {
        rl_optnum_decl d = { o[i].name, 0, 0, o[i].kind == O_INT };
        if (o[i].kind == O_INT || o[i].kind == O_NUM) {
            opt_range(&o[i], &d.min, &d.max);
            rl_optnum_list(stdout, &d, 1);
        } else if (o[i].kind == O_COUNT || o[i].kind == O_BYTES) {
            opt_range(&o[i], &d.min, &d.max);
            printf("%s %.17g %.17g size\n", o[i].name, d.min, d.max);
        }
    }
}

/* parse_opts' return after --help: the topic's help is printed, the topic returns 0. */
#define OPTS_HELP (-1)

/* Parses argv (after the topic) into o[]; *json set by --json; with hw (the topic has a
 * --hw option), resolves the profile into *hw. Returns 0, OPTS_HELP after printing the
 * help for --help, or RL_EXIT_USAGE after printing one error line and the usage. */
static int parse_opts(const topic *tp, opt *o, int n, int argc, char **argv, int *json, const rl_hw **hw)
{
    *json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            topic_usage(tp, stdout, 1);
            options_help(o, n);
            return OPTS_HELP;
        }
        if (strcmp(a, "--json") == 0) {
            *json = 1;
            continue;
        }
        if (strcmp(a, RL_OPTNUM_LIST_FLAG) == 0) {
            list_numeric(o, n);
            return OPTS_HELP;
        }
        char name[64];
        const char *val = NULL, *eq = strchr(a, '=');
        if (eq && eq - a < (long)sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
        }
        opt *op = strncmp(name, "--", 2) == 0 ? find_opt(o, n, name) : NULL;
        if (!op)
            return usage_error(tp, a[0] == '-' ? "unknown option '%s'%s" : "unexpected argument '%s'%s", a, "");
        if (op->kind == O_FLAG) {
            if (val)
                return usage_error(tp, "%s takes no value (got '%s')", name, val);
            op->num = 1;
            op->set = 1;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc)
                return usage_error(tp, "%s needs a value (%s)", name, op->what);
            val = argv[++i];
        }
        double v = 0;
        int bad = 0;
        if (op->kind == O_INT || op->kind == O_NUM) {
            char verr[256];
            double min, max;
            opt_range(op, &min, &max);
            if (rl_optnum(name, val, min, max, op->kind == O_INT, &v, verr, sizeof verr))
                return usage_error(tp, "%s%s", verr, "");
        } else if (op->kind == O_COUNT) {
            bad = rl_calc_parse_count(val, &v) != 0;
        } else if (op->kind == O_BYTES) {
            bad = rl_calc_parse_bytes(val, &v) != 0;
        }
        if (bad) {
            const char *hint = op->kind == O_COUNT ? "a count such as 7.5B, 70B, 4M, 2T or 1e9"
                                                   : "a size in bytes such as 4096, 128M (MiB), 100MB (1e6), 1GiB";
            char msg[160];
            snprintf(msg, sizeof msg, "bad value '%%s' for %%s: expected %s", hint);
            return usage_error(tp, msg, val, name);
        }
        if (op->kind == O_COUNT || op->kind == O_BYTES) { /* whole things, in the option's range */
            double min, max;
            opt_range(op, &min, &max);
            if (v != floor(v) || v < min || v > max) {
                char msg[200];
                snprintf(msg, sizeof msg, "%%s: '%%s' is %.6g, not a whole number%s from %g to %g", v,
                         op->kind == O_BYTES ? " of bytes" : "", min, max);
                return usage_error(tp, msg, name, val);
            }
        }
        op->num = v;
        op->str = val;
        op->set = 1;
    }
    for (int i = 0; i < n; i++)
        if (o[i].required && !o[i].set)
            return usage_error(tp, "missing %s (%s)", o[i].name, o[i].what);
    int rc = 0;
    if (hw)
        *hw = hw_opt(tp, find_opt(o, n, "--hw"), &rc);
    return rc;
}

static int calc_error(const topic *tp, const char *msg)
{
    return usage_error(tp, "%s%s", msg, "");
}

/* "31.406 GB = 29.249 GiB" style, scaled to the size. */
static const char *hbytes(char *buf, size_t n, double b)
{
    if (b >= 1e9)
        snprintf(buf, n, "%.3f GB = %.3f GiB", b / 1e9, b / 1073741824.0);
    else if (b >= 1e6)
        snprintf(buf, n, "%.3f MB = %.3f MiB", b / 1e6, b / 1048576.0);
    else if (b >= 1e3)
        snprintf(buf, n, "%.3f kB = %.3f KiB", b / 1e3, b / 1024.0);
    else
        snprintf(buf, n, "%.0f B", b);
    return buf;
}

static const char *htime(char *buf, size_t n, double s)
{
    if (s >= 1)
        snprintf(buf, n, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.3f ms", s * 1e3);
    else
        snprintf(buf, n, "%.3f us", s * 1e6);
    return buf;
}

static const char *hcount(char *buf, size_t n, double c)
{
    if (c >= 1e12)
        snprintf(buf, n, "%.4g T", c / 1e12);
    else if (c >= 1e9)
        snprintf(buf, n, "%.4g B", c / 1e9);
    else if (c >= 1e6)
        snprintf(buf, n, "%.4g M", c / 1e6);
    else
        snprintf(buf, n, "%.6g", c);
    return buf;
}

/* The first key under j whose value is null (JR's mark for a number that is not finite), or
 * NULL. */
static const char *null_key(json_t *j)
{
    const char *key, *sub;
    json_t *v;
    size_t i;
    if (json_is_object(j)) {
        json_object_foreach(j, key, v)
            if (json_is_null(v) || (sub = null_key(v)))
                return json_is_null(v) ? key : sub;
    } else if (json_is_array(j)) {
        json_array_foreach(j, i, v)
            if ((sub = null_key(v)))
                return sub;
    }
    return NULL;
}

/* Prints j and frees it; refuses, naming the key, when a number in it is not finite. */
static int emit_json(json_t *j)
{
    const char *bad = null_key(j);
    if (bad) {
        fprintf(stderr, "ringlab calc: '%s' is not a finite number with these inputs (too large, or a division by "
                "zero): check the inputs\n", bad);
        json_decref(j);
        return RL_EXIT_FAIL;
    }
    char *s = json_dumps(j, JSON_INDENT(2));
    json_decref(j);
    if (!s)
        return RL_EXIT_FAIL;
    printf("%s\n", s);
    free(s);
    return 0;
}

#define JR(obj, key, v) json_object_set_new((obj), (key), isfinite((double)(v)) ? json_real((double)(v)) : json_null())
#define JI(obj, key, v) json_object_set_new((obj), (key), json_integer((json_int_t)(v)))
#define JS(obj, key, v) json_object_set_new((obj), (key), json_string(v))

/* A topic's JSON object, opening with "topic" and "inputs" (*inputs, for the caller to fill). */
static json_t *json_topic(const char *topic, json_t **inputs)
{
    json_t *j = json_object();
    JS(j, "topic", topic);
    json_object_set_new(j, "inputs", *inputs = json_object());
    return j;
}

/* ------------------------------------------------------------------ zero */
static int run_zero(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--params", O_COUNT, 1, "the parameter count Ψ, e.g. 7.5B", 0, 0, 0, 1, 1e15 },
        { "--dp", O_INT, 1, "the data-parallel degree Nd, e.g. 64", 0, 0, 0, 0, 0 },
        { "--k", O_NUM, 0, "optimizer bytes per parameter, default 12", 0, 0, 0, 0, 1000 },
        { "--nodes-of", O_INT, 0, "hsdp group size G, default the largest divisor of Nd <= 8", 0, 0, 0, 0, 0 },
        { "--comm-bytes", O_NUM, 0, "bytes per communicated element, default 2", 0, 0, 0, 0.5, 16 },
    };
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, NULL);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    rl_calc_zero_in in = { .params = o[0].num, .dp = (int)o[1].num, .k = o[2].set ? o[2].num : 12,
                           .group = (int)o[3].num, .comm_bytes = o[4].num };
    if (o[2].set && o[2].num == 0)
        return calc_error(tp, "K = 0 would drop the optimizer state: give K > 0 (12 for mixed-precision Adam)");
    rl_calc_zero_out r;
    char err[256];
    if (rl_calc_zero(&in, &r, err, sizeof err))
        return calc_error(tp, err);
    if (json) {
        json_t *inj, *j = json_topic("zero", &inj);
        json_t *tr = json_object(), *te = json_object(), *tpap = json_object();
        JR(inj, "params", in.params);
        JI(inj, "dp", in.dp);
        JR(inj, "k", r.k);
        JI(inj, "group", r.group);
        JR(inj, "comm_bytes", r.comm_bytes);
        for (int i = 0; i < RL_CALC_ZERO_NKINDS; i++) {
            const char *nm = rl_calc_zero_name((rl_calc_zero_kind)i);
            JR(j, nm, r.bytes[i]);
            JR(tr, nm, r.traffic_bytes[i]);
            JR(te, nm, r.traffic_elems[i]);
            JR(tpap, nm, r.traffic_paper[i]);
        }
        json_object_set_new(j, "traffic", tr);
        json_object_set_new(j, "traffic_elements", te);
        json_object_set_new(j, "traffic_paper_elements", tpap);
        JS(j, "units", "bytes per rank; traffic: bytes (elements) one rank sends per step");
        return emit_json(j);
    }
    char b1[64];
    int g = r.group, R = in.dp / g;
    printf("ZeRO model-state memory per rank and traffic per rank per step (Rajbhandari et al. 2020)\n");
    printf("inputs:  Ψ = %s parameters (%.6g), Nd = %d data-parallel ranks, K = %g optimizer bytes per parameter,\n",
           hcount(b1, sizeof b1, in.params), in.params, in.dp, r.k);
    printf("         hsdp: shard inside groups of G = %d ranks, replicate across R = Nd/G = %d groups; "
           "%g bytes per communicated element\n", g, R, r.comm_bytes);
    printf("formula: bytes per rank: ddp (4+K)Ψ; zero1 4Ψ + KΨ/Nd; zero2 2Ψ + (2+K)Ψ/Nd; zero3 (4+K)Ψ/Nd; "
           "hsdp (4+K)Ψ/G\n");
    printf("         elements sent per rank per step (ring): ddp, zero1, zero2 2(Nd-1)/Nd·Ψ (≈ 2Ψ); "
           "zero3 3(Nd-1)/Nd·Ψ (≈ 3Ψ);\n         hsdp 3(G-1)/G·Ψ + 2(R-1)/R·Ψ/G\n");
    printf("units:   GB = 1e9 bytes, GiB = 2^30 bytes\n\n");
    printf("%-6s %20s %12s %12s   %16s %14s %10s\n", "", "memory/rank (B)", "(GB)", "(GiB)", "traffic (elem)",
           "traffic (GB)", "(GiB)");
    for (int i = 0; i < RL_CALC_ZERO_NKINDS; i++)
        printf("%-6s %20.0f %12.3f %12.3f   %16.6g %14.3f %10.3f\n", rl_calc_zero_name((rl_calc_zero_kind)i),
               r.bytes[i], r.bytes[i] / 1e9, r.bytes[i] / 1073741824.0, r.traffic_elems[i], r.traffic_bytes[i] / 1e9,
               r.traffic_bytes[i] / 1073741824.0);
    if (r.traffic_elems[RL_CALC_DDP] > 0)
        printf("\nzero3 moves %.2fx the traffic of ddp;", r.traffic_elems[RL_CALC_ZERO3] / r.traffic_elems[RL_CALC_DDP]);
    else
        printf("\nwith Nd = 1 no rank sends anything;");
    printf(" FSDP names: NO_SHARD = ddp, SHARD_GRAD_OP = zero2, FULL_SHARD = zero3, HYBRID_SHARD = hsdp\n");
    return 0;
}

/* ------------------------------------------------------------------ collectives */
static int run_coll(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--bytes", O_BYTES, 1, "the whole buffer S as in nccl-tests, e.g. 128M", 0, 0, 0, 0, 1e15 },
        { "--ranks", O_INT, 1, "the number of ranks n, e.g. 8", 0, 0, 0, 0, 0 },
        { "--hw", O_STR, 0, "hardware profile, default h100-nvlink", 0, 0, 0, 0, 0 },
        { "--algo", O_STR, 0, "ring or tree", 0, 0, 0, 0, 0 },
    };
    const rl_hw *hw;
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, &hw);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    rl_calc_coll_in in = { .kind = (rl_coll_kind)rl_coll_parse(tp->name), .algo = RL_ALGO_RING,
                           .ranks = (int)o[1].num, .bytes = o[0].num, .hw = hw };
    if (o[3].set) {
        if (strcmp(o[3].str, "tree") == 0)
            in.algo = RL_ALGO_TREE;
        else if (strcmp(o[3].str, "ring") != 0)
            return usage_error(tp, "unknown algorithm '%s'%s: use ring or tree", o[3].str, "");
    }
    rl_calc_coll_out r;
    char err[256], b1[64], b2[64], b3[64];
    if (rl_calc_coll(&in, &r, err, sizeof err))
        return calc_error(tp, err);
    const char *cname = rl_coll_name(in.kind), *algo = in.algo == RL_ALGO_TREE ? "tree" : "ring";
    if (json) {
        json_t *inj, *j = json_topic(cname, &inj);
        JS(inj, "collective", cname);
        JS(inj, "algo", algo);
        JI(inj, "ranks", in.ranks);
        JR(inj, "bytes", in.bytes);
        JS(inj, "hw", hw->name);
        JS(j, "link", r.link->name);
        JR(j, "alpha_s", r.link->alpha);
        JR(j, "link_bw_Bps", r.link->bw);
        JR(j, "time_s", r.time);
        JR(j, "time_us", r.time * 1e6);
        JR(j, "algbw_GBps", r.algbw / 1e9);
        JR(j, "busbw_GBps", r.busbw / 1e9);
        JR(j, "busbw_factor", r.factor);
        JR(j, "latency_steps", r.latency_steps);
        JR(j, "bytes_per_rank", r.bytes_per_rank);
        json_object_set_new(j, "crosses_nodes", json_boolean(r.crosses_nodes));
        return emit_json(j);
    }
    int n = in.ranks;
    printf("%s, %s algorithm, α-β model on %s\n", cname, algo, hw->name);
    printf("inputs:  S = %.0f bytes (%s), n = %d ranks\n", in.bytes, hbytes(b1, sizeof b1, in.bytes), n);
    printf("         link %s: bw = %.0f GB/s each way (β = 1/bw), α = %g us per step%s\n", r.link->name,
           r.link->bw / 1e9, r.link->alpha * 1e6,
           r.crosses_nodes ? " (n > GPUs per node: the inter-node link)" : "");
    const char *f_time = in.algo == RL_ALGO_TREE ? "t = 2·log2(n)·α + 2·S·β"
                       : in.kind == RL_COLL_ALL_REDUCE ? "t = 2(n-1)α + 2(n-1)/n·S·β"
                       : in.kind == RL_COLL_BROADCAST || in.kind == RL_COLL_REDUCE ? "t = (n-1)α + S·β"
                       : "t = (n-1)α + (n-1)/n·S·β";
    const char *f_bus = in.kind == RL_COLL_ALL_REDUCE ? "2(n-1)/n"
                      : in.kind == RL_COLL_BROADCAST || in.kind == RL_COLL_REDUCE ? "1" : "(n-1)/n";
    printf("formula: %s; algbw = S/t; busbw = algbw × %s (nccl-tests)\n", f_time, f_bus);
    if (fabs(r.latency_steps - round(r.latency_steps)) < 1e-9)
        printf("result:  t = %s (%.0f latency steps of α)\n", htime(b2, sizeof b2, r.time), r.latency_steps);
    else /* (the tree's 2·log2(n) when n is not a power of two: the model's count, not a whole one) */
        printf("result:  t = %s (%.4g latency steps of α, as the model counts them)\n", htime(b2, sizeof b2, r.time),
               r.latency_steps);
    printf("         sent per rank %.0f bytes (%s)\n", r.bytes_per_rank, hbytes(b3, sizeof b3, r.bytes_per_rank));
    printf("         algbw = %.3f GB/s, busbw = %.3f GB/s (factor %.6g; GB/s = 1e9 B/s)\n", r.algbw / 1e9,
           r.busbw / 1e9, r.factor);
    return 0;
}

/* ------------------------------------------------------------------ tp */
static int run_tp(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--b", O_COUNT, 1, "micro-batch size b", 0, 0, 0, 1, 1e9 },
        { "--s", O_COUNT, 1, "sequence length s", 0, 0, 0, 1, 1e9 },
        { "--h", O_COUNT, 1, "hidden size h", 0, 0, 0, 1, 1e9 },
        { "--t", O_INT, 1, "TP size t", 0, 0, 0, 0, 0 },
        { "--hw", O_STR, 0, "hardware profile, default h100-nvlink", 0, 0, 0, 0, 0 },
        { "--dtype-bytes", O_NUM, 0, "bytes per activation element, default 2 (bf16)", 0, 0, 0, 0.5, 16 },
    };
    const rl_hw *hw;
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, &hw);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    rl_calc_tp_in in = { .b = o[0].num, .s = o[1].num, .h = o[2].num, .t = (int)o[3].num, .dtype_bytes = o[5].num, .hw = hw };
    rl_calc_tp_out r;
    char err[256], b1[64], b2[64], b3[64], b4[64];
    if (fmod(in.h, in.t) != 0) {
        snprintf(err, sizeof err, "--t %d does not divide --h %.0f: each of the t ranks holds h/t of a layer's "
                 "columns (pick t dividing h)", in.t, in.h);
        return calc_error(tp, err);
    }
    if (rl_calc_tp(&in, &r, err, sizeof err))
        return calc_error(tp, err);
    double db = in.dtype_bytes > 0 ? in.dtype_bytes : 2;
    if (json) {
        json_t *inj, *j = json_topic("tp", &inj);
        JR(inj, "b", in.b);
        JR(inj, "s", in.s);
        JR(inj, "h", in.h);
        JI(inj, "t", in.t);
        JR(inj, "dtype_bytes", db);
        JS(inj, "hw", hw->name);
        JR(j, "allreduce_elements", r.allreduce_elems);
        JR(j, "forward_elements", r.fwd_elems);
        JR(j, "backward_elements", r.bwd_elems);
        JR(j, "layer_elements", r.layer_elems);
        JR(j, "layer_bytes", r.layer_bytes);
        JR(j, "forward_elements_ring", r.fwd_elems_ring);
        JR(j, "backward_elements_ring", r.bwd_elems_ring);
        JR(j, "layer_bytes_ring", r.layer_bytes_ring);
        JR(j, "forward_time_s", r.fwd_time);
        JR(j, "backward_time_s", r.bwd_time);
        JR(j, "layer_time_s", r.layer_time);
        JS(j, "link", r.link->name);
        json_object_set_new(j, "crosses_nodes", json_boolean(r.crosses_nodes));
        return emit_json(j);
    }
    printf("Tensor-parallel traffic per transformer layer (Megatron-LM: 2 all-reduces forward, 2 backward)\n");
    printf("inputs:  b = %g, s = %g, h = %g, t = %d, %g bytes per element, profile %s\n", in.b, in.s, in.h, in.t, db,
           hw->name);
    printf("formula: each all-reduce buffer is bsh elements; a ring all-reduce sends 2(t-1)/t·bsh ≈ 2bsh per rank\n");
    printf("         forward 2 × 2bsh = 4bsh elements, backward 4bsh, layer 8bsh elements = 8bsh × %g bytes "
           "(bytes counted once)\n", db);
    printf("units:   GB = 1e9 bytes, GiB = 2^30 bytes\n");
    printf("result:  all-reduce buffer: %.0f elements = %s\n", r.allreduce_elems,
           hbytes(b1, sizeof b1, r.allreduce_elems * db));
    printf("         forward 4bsh = %.0f elements = %s\n", r.fwd_elems, hbytes(b1, sizeof b1, r.fwd_elems * db));
    printf("         backward 4bsh = %.0f elements = %s\n", r.bwd_elems, hbytes(b1, sizeof b1, r.bwd_elems * db));
    printf("         per layer 8bsh = %.0f elements = %s sent per rank\n", r.layer_elems,
           hbytes(b1, sizeof b1, r.layer_bytes));
    printf("         exact ring for t = %d: 8(t-1)/t·bsh = %.0f elements = %s\n", in.t, r.fwd_elems_ring + r.bwd_elems_ring,
           hbytes(b2, sizeof b2, r.layer_bytes_ring));
    printf("time:    %s per all-reduce on %s; forward %s, backward %s, per layer %s\n",
           htime(b1, sizeof b1, r.layer_time / 4), r.link->name, htime(b2, sizeof b2, r.fwd_time),
           htime(b3, sizeof b3, r.bwd_time), htime(b4, sizeof b4, r.layer_time));
    if (r.crosses_nodes)
        printf("warning: t = %d exceeds the %d GPUs per node of %s: every layer's all-reduces cross the "
               "inter-node link (%s); keep TP inside a node\n", in.t, hw->gpus_per_node, hw->name, hw->inter.name);
    return 0;
}

/* ------------------------------------------------------------------ activation */
static int run_activation(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--s", O_COUNT, 1, "sequence length s", 0, 0, 0, 1, 1e9 },
        { "--b", O_COUNT, 1, "micro-batch size b", 0, 0, 0, 1, 1e9 },
        { "--h", O_COUNT, 1, "hidden size h", 0, 0, 0, 1, 1e9 },
        { "--a", O_COUNT, 1, "attention heads a", 0, 0, 0, 1, 1e9 },
        { "--t", O_INT, 0, "TP size t, default 1", 0, 0, 0, 0, 0 },
        { "--sp", O_FLAG, 0, "sequence parallelism", 0, 0, 0, 0, 0 },
        { "--recompute", O_STR, 0, "none, selective or full", 0, 0, 0, 0, 0 },
        { "--layers", O_INT, 0, "layers L, default 1", 0, 0, 0, 0, 0 },
    };
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, NULL);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    int recompute = o[6].set ? rl_calc_recompute_parse(o[6].str) : RL_CALC_RECOMPUTE_NONE;
    if (recompute < 0)
        return usage_error(tp, "unknown recompute mode '%s'%s: use none, selective or full", o[6].str, "");
    rl_calc_act_in in = { .s = o[0].num, .b = o[1].num, .h = o[2].num, .a = o[3].num, .t = o[4].set ? (int)o[4].num : 1,
                          .sp = o[5].set, .recompute = (rl_calc_recompute)recompute,
                          .layers = o[7].set ? (int)o[7].num : 1 };
    rl_calc_act_out r;
    char err[256], b1[64];
    if (rl_calc_activation(&in, &r, err, sizeof err))
        return calc_error(tp, err);
    if (json) {
        json_t *inj, *j = json_topic("activation", &inj);
        JR(inj, "s", in.s);
        JR(inj, "b", in.b);
        JR(inj, "h", in.h);
        JR(inj, "a", in.a);
        JI(inj, "t", in.t);
        json_object_set_new(inj, "sp", json_boolean(in.sp));
        JS(inj, "recompute", rl_calc_recompute_name(in.recompute));
        JI(inj, "layers", in.layers);
        JS(j, "formula", r.formula);
        JR(j, "coeff", r.coeff);
        JR(j, "per_layer_bytes", r.per_layer);
        JR(j, "total_bytes", r.total);
        return emit_json(j);
    }
    printf("Activation memory per transformer layer (Korthikanti et al. 2022, Table 2: 16-bit activations,\n"
           "1-byte dropout masks; embeddings and the output layer not included)\n");
    printf("inputs:  s = %g, b = %g, h = %g, a = %g, t = %d, sequence parallel %s, recompute %s, L = %d\n", in.s,
           in.b, in.h, in.a, in.t, in.sp && in.t > 1 ? "yes" : (in.sp ? "yes (no effect at t = 1)" : "no"),
           rl_calc_recompute_name(in.recompute), in.layers);
    printf("formula: %s bytes per layer = sbh × %.6g; for L layers × L\n", r.formula, r.coeff);
    printf("units:   GB = 1e9 bytes, GiB = 2^30 bytes\n");
    printf("result:  per layer %.0f bytes = %s\n", r.per_layer, hbytes(b1, sizeof b1, r.per_layer));
    printf("         %d layers  %.0f bytes = %s\n", in.layers, r.total, hbytes(b1, sizeof b1, r.total));
    return 0;
}

/* ------------------------------------------------------------------ bubble */
static int run_bubble(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--pp", O_INT, 1, "pipeline stages p", 0, 0, 0, 0, 0 },
        { "--mb", O_INT, 0, "micro-batches m per step", 0, 0, 0, 0, 0 },
        { "--v", O_INT, 0, "virtual stages per rank (interleaved), default 2", 0, 0, 0, 0, 0 },
        { "--schedule", O_STR, 0, "naive, gpipe, 1f1b, interleaved or zb-h1", 0, 0, 0, 0, 0 },
    };
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, NULL);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    int sched = o[3].set ? rl_calc_schedule_parse(o[3].str)
              : (o[2].set && o[2].num > 1 ? RL_CALC_SCHED_INTERLEAVED : RL_CALC_SCHED_1F1B);
    if (sched < 0)
        return usage_error(tp, "unknown schedule '%s'%s: use naive, gpipe, 1f1b, interleaved or zb-h1", o[3].str, "");
    if (sched != RL_CALC_SCHED_NAIVE && !o[1].set)
        return usage_error(tp, "missing --mb M (micro-batches per step)%s%s", "", "");
    rl_calc_bubble_in in = { .p = (int)o[0].num, .m = (int)o[1].num, .v = (int)o[2].num, .sched = (rl_calc_schedule)sched };
    rl_calc_bubble_out r;
    char err[256];
    if (rl_calc_bubble(&in, &r, err, sizeof err))
        return calc_error(tp, err);
    if (json) {
        json_t *inj, *j = json_topic("bubble", &inj);
        JS(inj, "schedule", rl_calc_schedule_name(in.sched));
        JI(inj, "p", in.p);
        JI(inj, "m", r.m);
        JI(inj, "v", r.v);
        JR(j, "bubble_fraction_total", r.frac_total);
        JR(j, "bubble_fraction_ideal", r.frac_ideal);
        JR(j, "bubble_slots", r.bubble_slots);
        JR(j, "peak_inflight_microbatches", r.peak_inflight);
        return emit_json(j);
    }
    const char *ft, *fi, *peak;
    switch (in.sched) {
    case RL_CALC_SCHED_NAIVE:
        ft = "(p-1)/p (one batch, no micro-batches)", fi = "p-1", peak = "1 batch"; break;
    case RL_CALC_SCHED_GPIPE:
        ft = "(p-1)/(m+p-1)", fi = "(p-1)/m", peak = "m (all forwards before any backward)"; break;
    case RL_CALC_SCHED_1F1B:
        ft = "(p-1)/(m+p-1)", fi = "(p-1)/m", peak = "min(m, p) (warm-up of p-r-1 forwards on stage r)"; break;
    case RL_CALC_SCHED_INTERLEAVED:
        ft = "(p-1)/(vm+p-1)", fi = "(p-1)/(vm)",
        peak = "p + (p-1)/v (Megatron warm-up 2(p-1) + (v-1)p chunks of 1/v stage, +1), at most m"; break;
    default:
        ft = "(p-1)/(3m+p-1)", fi = "(p-1)/(3m)",
        peak = "min(m, p), as 1F1B (T_F = T_B = T_W assumed; bubble (p-1)(T_F+T_B-T_W))"; break;
    }
    printf("Pipeline bubble, schedule %s (Narayanan et al. 2021; zero-bubble: Qi et al. 2023)\n",
           rl_calc_schedule_name(in.sched));
    printf("inputs:  p = %d stages, m = %d micro-batches", in.p, r.m);
    if (in.sched == RL_CALC_SCHED_INTERLEAVED)
        printf(", v = %d virtual stages per rank", r.v);
    printf("\nformula: bubble / total time = %s; bubble / ideal time = %s\n", ft, fi);
    printf("         peak in-flight micro-batches on stage 0 = %s\n", peak);
    printf("result:  bubble = %.2f%% of total time, %.2f%% of ideal time (%.4g micro-batch slots of t_f+t_b)\n",
           100 * r.frac_total, 100 * r.frac_ideal, r.bubble_slots);
    printf("         peak in flight: %.4g micro-batches of activations\n", r.peak_inflight);
    if (in.sched != RL_CALC_SCHED_NAIVE && in.p > 1 && r.m < 4LL * in.p)
        printf("warning: m = %d < 4p = %lld: the bubble is large; use more micro-batches\n", r.m, 4LL * in.p);
    return 0;
}

/* ------------------------------------------------------------------ flops */
static int run_flops(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--params", O_COUNT, 1, "parameters N, e.g. 70B", 0, 0, 0, 1, 1e15 },
        { "--tokens", O_COUNT, 1, "training tokens D, e.g. 2T", 0, 0, 0, 1, 1e18 },
        { "--layers", O_INT, 0, "layers L (attention term)", 0, 0, 0, 0, 0 },
        { "--hidden", O_COUNT, 0, "hidden size h = H·Q", 0, 0, 0, 1, 1e9 },
        { "--heads", O_INT, 0, "attention heads H", 0, 0, 0, 0, 0 },
        { "--seq", O_COUNT, 0, "sequence length T", 0, 0, 0, 1, 1e9 },
    };
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, NULL);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    int nattn = o[2].set + o[3].set + o[4].set + o[5].set;
    if (nattn && nattn < 4)
        return usage_error(tp, "the attention term needs all of --layers, --hidden, --heads and --seq%s%s", "", "");
    rl_calc_flops_in in = { .params = o[0].num, .tokens = o[1].num, .layers = (int)o[2].num, .hidden = o[3].num,
                            .heads = (int)o[4].num, .seq = o[5].num };
    rl_calc_flops_out r;
    char err[256], b1[64], b2[64];
    if (rl_calc_flops(&in, &r, err, sizeof err))
        return calc_error(tp, err);
    if (json) {
        json_t *inj, *j = json_topic("flops", &inj);
        JR(inj, "params", in.params);
        JR(inj, "tokens", in.tokens);
        JI(inj, "layers", in.layers);
        JR(inj, "hidden", in.hidden);
        JI(inj, "heads", in.heads);
        JR(inj, "seq", in.seq);
        JR(j, "per_token_6n", r.per_token_6n);
        JR(j, "per_token_attention", r.per_token_attn);
        JR(j, "per_token", r.per_token_6n + r.per_token_attn);
        JR(j, "flops_6nd", r.flops_6nd);
        JR(j, "flops_attention", r.flops_attn);
        JR(j, "flops_total", r.total);
        JR(j, "head_dim", r.head_dim);
        return emit_json(j);
    }
    printf("Training FLOPs (6 per parameter per token: 2 forward, 4 backward; attention term: PaLM, appendix B)\n");
    printf("inputs:  N = %s parameters, D = %s tokens", hcount(b1, sizeof b1, in.params), hcount(b2, sizeof b2, in.tokens));
    if (in.layers)
        printf(", L = %d, H = %d heads, Q = h/H = %g, T = %g", in.layers, in.heads, r.head_dim, in.seq);
    printf("\nformula: 6ND%s\n", in.layers ? "; with attention (6N + 12·L·H·Q·T)·D" : "");
    printf("result:  6N = %.6g FLOPs per token; 6ND = %.6g FLOPs\n", r.per_token_6n, r.flops_6nd);
    if (in.layers)
        printf("         12·L·H·Q·T = %.6g FLOPs per token (%.2f%% of 6N); total = %.6g FLOPs\n", r.per_token_attn,
               100 * r.per_token_attn / r.per_token_6n, r.total);
    return 0;
}

static int run_mfu(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--flops", O_COUNT, 1, "model FLOPs done in --time, e.g. 4.2e15", 0, 0, 0, 1, 1e30 },
        { "--time", O_NUM, 1, "seconds", 0, 0, 0, 1e-9, 1e9 },
        { "--hw", O_STR, 0, "hardware profile, default h100-nvlink", 0, 0, 0, 0, 0 },
        { "--gpus", O_INT, 0, "GPUs that did the work, default 1", 0, 0, 0, 0, 0 },
    };
    const rl_hw *hw;
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, &hw);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    rl_calc_mfu_in in = { .flops = o[0].num, .time = o[1].num, .gpus = o[3].set ? (int)o[3].num : 1, .hw = hw };
    rl_calc_mfu_out r;
    char err[256];
    if (rl_calc_mfu(&in, &r, err, sizeof err))
        return calc_error(tp, err);
    if (json) {
        json_t *inj, *j = json_topic("mfu", &inj);
        JR(inj, "flops", in.flops);
        JR(inj, "time_s", in.time);
        JI(inj, "gpus", in.gpus);
        JS(inj, "hw", hw->name);
        JR(j, "achieved_flops_per_s", r.achieved);
        JR(j, "peak_flops_per_s", r.peak);
        JR(j, "mfu", r.mfu);
        return emit_json(j);
    }
    printf("Model FLOPs utilisation\n");
    printf("inputs:  F = %.6g FLOPs in %g s on %d GPU(s) of %s (peak %.4g TFLOP/s dense bf16 each)\n", in.flops,
           in.time, in.gpus, hw->name, hw->peak_flops_bf16 / 1e12);
    printf("formula: MFU = (F / time) / (GPUs × peak FLOP/s)\n");
    printf("result:  achieved %.4g TFLOP/s of %.4g TFLOP/s peak: MFU = %.2f%%\n", r.achieved / 1e12, r.peak / 1e12,
           100 * r.mfu);
    if (r.mfu > 1)
        printf("warning: MFU above 100%% is impossible: the FLOPs are too many, the time too short, or the GPUs too "
               "few (--gpus) for this profile's peak\n");
    return 0;
}

/* ------------------------------------------------------------------ moe */
static int run_moe(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--tokens", O_COUNT, 1, "tokens routed on one rank per step", 0, 0, 0, 1, 1e12 },
        { "--experts", O_INT, 1, "experts E", 0, 0, 0, 0, 0 },
        { "--topk", O_INT, 1, "experts per token k", 0, 0, 0, 0, 0 },
        { "--cf", O_NUM, 1, "capacity factor, e.g. 1.25", 0, 0, 0, 0, 1000 },
        { "--hidden", O_COUNT, 1, "hidden size h", 0, 0, 0, 1, 1e9 },
        { "--dtype-bytes", O_NUM, 0, "bytes per element, default 2 (bf16)", 0, 0, 0, 0.5, 16 },
    };
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, NULL);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    if (o[3].num <= 0)
        return usage_error(tp, "the capacity factor must be > 0 (got '%s'); 1.0 to 1.25 is usual%s", o[3].str, "");
    rl_calc_moe_in in = { .tokens = o[0].num, .experts = (int)o[1].num, .topk = (int)o[2].num, .cf = o[3].num,
                          .hidden = o[4].num, .dtype_bytes = o[5].num };
    rl_calc_moe_out r;
    char err[256], b1[64], b2[64];
    if (rl_calc_moe(&in, &r, err, sizeof err))
        return calc_error(tp, err);
    double db = in.dtype_bytes > 0 ? in.dtype_bytes : 2;
    if (json) {
        json_t *inj, *j = json_topic("moe", &inj);
        JR(inj, "tokens", in.tokens);
        JI(inj, "experts", in.experts);
        JI(inj, "topk", in.topk);
        JR(inj, "cf", in.cf);
        JR(inj, "hidden", in.hidden);
        JR(inj, "dtype_bytes", db);
        JR(j, "capacity", r.capacity);
        JR(j, "routed", r.routed);
        JR(j, "dispatch_elements", r.dispatch_elems);
        JR(j, "dispatch_bytes", r.dispatch_bytes);
        JR(j, "combine_bytes", r.combine_bytes);
        JR(j, "total_bytes", r.total_bytes);
        JR(j, "per_token_bytes", r.per_token_bytes);
        return emit_json(j);
    }
    printf("MoE capacity and all-to-all volume (GShard / Switch Transformer)\n");
    printf("inputs:  %g tokens per rank, E = %d experts, top-k = %d, capacity factor %g, h = %g, %g bytes per element\n",
           in.tokens, in.experts, in.topk, in.cf, in.hidden, db);
    printf("formula: capacity = ceil(tokens·k/E · cf); dispatch = tokens·k·h elements (each routed token's vector\n"
           "         crosses once per chosen expert), combine the same back; bytes = elements × %g, counted once\n", db);
    printf("units:   GB = 1e9 bytes, GiB = 2^30 bytes\n");
    printf("result:  capacity %.0f tokens per expert (%.0f token-expert pairs routed; beyond capacity they drop)\n",
           r.capacity, r.routed);
    printf("         dispatch %.0f elements = %s per rank\n", r.dispatch_elems, hbytes(b1, sizeof b1, r.dispatch_bytes));
    printf("         combine  %s; dispatch + combine %s per rank per MoE layer\n",
           hbytes(b1, sizeof b1, r.combine_bytes), hbytes(b2, sizeof b2, r.total_bytes));
    printf("         per token: 2·k·h·%g = %.0f bytes per MoE layer (upper bound: tokens whose expert is local stay)\n",
           db, r.per_token_bytes);
    return 0;
}

/* ------------------------------------------------------------------ plan */
static void warn_names(int w, char *buf, size_t n)
{
    snprintf(buf, n, "%s%s%s", w & RL_CALC_WARN_TP_NODES ? "TP-across-nodes " : "",
             w & RL_CALC_WARN_FEW_MB ? "m<4p " : "", w & RL_CALC_WARN_OOM ? "out-of-memory" : "");
}

static int run_plan(const topic *tp, int argc, char **argv)
{
    opt o[] = {
        { "--params", O_COUNT, 1, "parameters Ψ, e.g. 70B", 0, 0, 0, 1, 1e15 },
        { "--layers", O_INT, 1, "layers L", 0, 0, 0, 0, 0 },
        { "--hidden", O_COUNT, 1, "hidden size h", 0, 0, 0, 1, 1e9 },
        { "--heads", O_INT, 1, "attention heads a", 0, 0, 0, 0, 0 },
        { "--seq", O_COUNT, 1, "sequence length S", 0, 0, 0, 1, 1e9 },
        { "--gbs", O_INT, 1, "global batch in sequences", 0, 0, 0, 0, 0 },
        { "--gpus", O_INT, 1, "GPUs G", 0, 0, 0, 0, 0 },
        { "--hw", O_STR, 0, "hardware profile, default h100-nvlink", 0, 0, 0, 0, 0 },
        { "--top", O_INT, 0, "rows to show, default 10 (0: all)", 0, 0, 0, 0, 100000 },
        { "--k", O_NUM, 0, "optimizer bytes per parameter, default 12", 0, 0, 0, 0, 1000 },
    };
    const rl_hw *hw;
    int json, rc = parse_opts(tp, o, NOPT(o), argc, argv, &json, &hw);
    if (rc)
        return rc == OPTS_HELP ? 0 : rc;
    if (o[9].set && o[9].num == 0)
        return calc_error(tp, "K = 0 would drop the optimizer state: give K > 0 (12 for mixed-precision Adam)");
    rl_calc_plan_in in = { .params = o[0].num, .layers = (int)o[1].num, .hidden = o[2].num, .heads = (int)o[3].num,
                           .seq = o[4].num, .gbs = (int)o[5].num, .gpus = (int)o[6].num, .hw = hw, .k = o[9].num };
    rl_calc_plan_row *rows;
    int n, top = o[8].set ? (int)o[8].num : 10;
    char err[512], b1[64], wb[64];
    if (rl_calc_plan(&in, &rows, &n, err, sizeof err))
        return calc_error(tp, err);
    int fit = 0;
    for (int i = 0; i < n; i++)
        fit += !(rows[i].warnings & RL_CALC_WARN_OOM);
    if (top <= 0 || top > n)
        top = n;
    if (json) {
        json_t *inj, *j = json_topic("plan", &inj), *arr = json_array();
        JR(inj, "params", in.params);
        JI(inj, "layers", in.layers);
        JR(inj, "hidden", in.hidden);
        JI(inj, "heads", in.heads);
        JR(inj, "seq", in.seq);
        JI(inj, "gbs", in.gbs);
        JI(inj, "gpus", in.gpus);
        JS(inj, "hw", hw->name);
        JI(j, "candidates", n);
        JI(j, "fitting", fit);
        for (int i = 0; i < top; i++) {
            const rl_calc_plan_row *r = &rows[i];
            json_t *e = json_object(), *w = json_array();
            JI(e, "tp", r->tp);
            JI(e, "pp", r->pp);
            JI(e, "dp", r->dp);
            JI(e, "m", r->m);
            JI(e, "b", r->b);
            JI(e, "zero", r->zero);
            JS(e, "recompute", rl_calc_recompute_name(r->recompute));
            JR(e, "step_time_s", r->step_time);
            JR(e, "compute_time_s", r->compute_time);
            JR(e, "bubble_time_s", r->bubble_time);
            JR(e, "tp_time_s", r->tp_time);
            JR(e, "pp_time_s", r->pp_time);
            JR(e, "dp_time_s", r->dp_time);
            JR(e, "mem_states_bytes", r->mem_states);
            JR(e, "mem_activation_bytes", r->mem_act);
            JR(e, "mem_total_bytes", r->mem_total);
            JR(e, "mfu", r->mfu);
            json_object_set_new(e, "fits", json_boolean(!(r->warnings & RL_CALC_WARN_OOM)));
            if (r->warnings & RL_CALC_WARN_TP_NODES)
                json_array_append_new(w, json_string("tp_across_nodes"));
            if (r->warnings & RL_CALC_WARN_FEW_MB)
                json_array_append_new(w, json_string("m_lt_4p"));
            if (r->warnings & RL_CALC_WARN_OOM)
                json_array_append_new(w, json_string("out_of_memory"));
            json_object_set_new(e, "warnings", w);
            json_array_append_new(arr, e);
        }
        json_object_set_new(j, "plans", arr);
        free(rows);
        return emit_json(j);
    }
    printf("Parallelism plan: %s parameters, L = %d, h = %g, a = %d, S = %g, global batch %d sequences,\n",
           hcount(b1, sizeof b1, in.params), in.layers, in.hidden, in.heads, in.seq, in.gbs);
    printf("%d GPUs of %s (%d per node, %.0f GB HBM each)\n", in.gpus, hw->name, hw->gpus_per_node, hw->hbm_bytes / 1e9);
    printf("model:   step = 1F1B's micro-batches, fill and drain (compute + TP + PP of a micro-batch on a stage)\n"
           "         + DP comm (not overlapped); memory = ZeRO states of Ψ/(TP·PP) + the activations in flight\n"
           "         (ringlab calc plan --help for the whole model)\n");
    printf("%d candidates, %d fit in memory; best %d shown (GB = 1e9 bytes)\n\n", n, fit, top);
    printf("%4s %3s %3s %4s %4s %3s %4s %-9s %10s %6s %8s %8s %8s %8s %9s  %s\n", "rank", "TP", "PP", "DP", "m", "b",
           "ZeRO", "recompute", "step (s)", "MFU", "bubble", "TP comm", "DP comm", "mem GB", "(GiB)", "warnings");
    for (int i = 0; i < top; i++) {
        const rl_calc_plan_row *r = &rows[i];
        warn_names(r->warnings, wb, sizeof wb);
        printf("%4d %3d %3d %4d %4d %3d %4d %-9s %10.4f %5.1f%% %8.4f %8.4f %8.4f %8.2f %9.2f  %s\n", i + 1, r->tp,
               r->pp, r->dp, r->m, r->b, r->zero, rl_calc_recompute_name(r->recompute), r->step_time, 100 * r->mfu,
               r->bubble_time, r->tp_time, r->dp_time, r->mem_total / 1e9, r->mem_total / 1073741824.0, wb);
    }
    if (fit == 0)
        printf("\nwarning: nothing fits in %.0f GB per GPU: add GPUs or shorten the sequence\n", hw->hbm_bytes / 1e9);
    free(rows);
    return 0;
}

/* ------------------------------------------------------------------ topics */
static const char UNITS[] =
    "Sizes: counts take K, M, B (=G), T decimal suffixes (7.5B = 7.5e9); bytes take K/M/G (binary, as\n"
    "nccl-tests: 128M = 128 MiB), KB/MB/GB (decimal) or KiB/MiB/GiB. Output: GB = 1e9 bytes, GiB = 2^30\n"
    "bytes, GB/s = 1e9 B/s. --json prints one JSON object instead (keys below); errors exit 2.\n";

static const topic topics[] = {
    { "zero", "ZeRO/FSDP model-state memory per rank and traffic per rank per step.",
      "--params P --dp N [--k 12] [--nodes-of G] [--comm-bytes 2] [--json]",
      "Formula (Rajbhandari et al. 2020), bytes per rank: ddp (4+K)Ψ; zero1 4Ψ + KΨ/Nd;\n"
      "zero2 2Ψ + (2+K)Ψ/Nd; zero3 (4+K)Ψ/Nd; hsdp (HYBRID_SHARD: FULL_SHARD inside groups of G,\n"
      "replicate across R = Nd/G groups) (4+K)Ψ/G. Default G: the largest divisor of Nd <= 8 (a node).\n"
      "Traffic, elements sent per rank per step (ring): ddp/zero1/zero2 2(Nd-1)/Nd·Ψ ≈ 2Ψ;\n"
      "zero3 3(Nd-1)/Nd·Ψ ≈ 3Ψ (1.5x ddp); hsdp 3(G-1)/G·Ψ + 2(R-1)/R·Ψ/G; bytes = elements × comm-bytes.\n"
      "JSON keys: topic, inputs{params,dp,k,group,comm_bytes}, ddp, zero1, zero2, zero3, hsdp (bytes per\n"
      "rank), traffic{ddp..hsdp} (bytes per rank per step), traffic_elements{...},\n"
      "traffic_paper_elements{...} (2Ψ, 2Ψ, 2Ψ, 3Ψ, 3Ψ + 2Ψ/G), units.\n",
      run_zero },
    { "allreduce", "All-reduce α-β time, algbw and busbw.", "--bytes S --ranks N [--hw PROFILE] [--algo ring|tree] [--json]",
      "Formula: ring t = 2(n-1)α + 2(n-1)/n·S·β; tree t = 2·log2(n)·α + 2·S·β; algbw = S/t;\n"
      "busbw = algbw × 2(n-1)/n (nccl-tests). The link is the profile's NVLink/PCIe inside a node, its\n"
      "inter-node link when n > GPUs per node. Default --hw h100-nvlink, --algo ring.\n"
      "JSON keys: topic, inputs{collective,algo,ranks,bytes,hw}, link, alpha_s, link_bw_Bps, time_s,\n"
      "time_us, algbw_GBps, busbw_GBps, busbw_factor, latency_steps, bytes_per_rank, crosses_nodes.\n",
      run_coll },
    { "reduce_scatter", "Reduce-scatter α-β time, algbw and busbw.", "--bytes S --ranks N [--hw PROFILE] [--json]",
      "Formula: ring t = (n-1)α + (n-1)/n·S·β (S = the whole input, count × n × type size);\n"
      "algbw = S/t; busbw = algbw × (n-1)/n. JSON keys as allreduce.\n", run_coll },
    { "all_gather", "All-gather α-β time, algbw and busbw.", "--bytes S --ranks N [--hw PROFILE] [--json]",
      "Formula: ring t = (n-1)α + (n-1)/n·S·β (S = the whole output); algbw = S/t;\n"
      "busbw = algbw × (n-1)/n. JSON keys as allreduce.\n", run_coll },
    { "all_to_all", "All-to-all α-β time, algbw and busbw.", "--bytes S --ranks N [--hw PROFILE] [--json]",
      "Formula: t = (n-1)α + (n-1)/n·S·β (S = one rank's buffer); algbw = S/t;\n"
      "busbw = algbw × (n-1)/n. JSON keys as allreduce.\n", run_coll },
    { "tp", "Tensor-parallel traffic per transformer layer and its time on a profile.",
      "--b B --s S --h H --t T [--hw PROFILE] [--dtype-bytes 2] [--json]",
      "Formula (Megatron-LM): 2 all-reduces forward (g after attention and MLP) and 2 backward (f), each\n"
      "of a bsh-element buffer; a ring all-reduce sends 2(t-1)/t·bsh ≈ 2bsh elements per rank, so forward\n"
      "4bsh, backward 4bsh, per layer 8bsh elements = 8bsh × dtype-bytes bytes (counted once: h=8192, b=2,\n"
      "s=4096 → 1.07 GB). Sequence parallelism moves the same volume (reduce-scatter + all-gather).\n"
      "Time: ring all-reduces on the profile's link; warns when t > GPUs per node.\n"
      "JSON keys: topic, inputs{b,s,h,t,dtype_bytes,hw}, allreduce_elements, forward_elements,\n"
      "backward_elements, layer_elements, layer_bytes, forward_elements_ring, backward_elements_ring,\n"
      "layer_bytes_ring (exact 2(t-1)/t), forward_time_s, backward_time_s, layer_time_s, link, crosses_nodes.\n",
      run_tp },
    { "activation", "Activation memory per layer and for L layers (Korthikanti et al. 2022).",
      "--s S --b B --h H --a A [--t T] [--sp] [--recompute none|selective|full] [--layers L] [--json]",
      "Formula, bytes per layer (16-bit activations, 1-byte dropout masks): no parallelism sbh(34 + 5as/h);\n"
      "TP sbh(10 + 24/t + 5as/(ht)); TP+SP (sbh/t)(34 + 5as/h); TP + selective recompute sbh(10 + 24/t);\n"
      "TP+SP + selective 34sbh/t; full recompute 2sbh. For L layers: × L.\n"
      "JSON keys: topic, inputs{s,b,h,a,t,sp,recompute,layers}, formula, coeff (bytes per layer / sbh),\n"
      "per_layer_bytes, total_bytes.\n",
      run_activation },
    { "bubble", "Pipeline bubble fraction and peak in-flight micro-batches.",
      "--pp P --mb M [--v V] [--schedule naive|gpipe|1f1b|interleaved|zb-h1] [--json]",
      "Formula (Narayanan et al. 2021; Qi et al. 2023): gpipe/1f1b bubble = (p-1)/(m+p-1) of total time,\n"
      "(p-1)/m of ideal time; interleaved (v chunks per rank, m a multiple of p) (p-1)/(vm+p-1) and\n"
      "(p-1)/(vm); zb-h1 with T_F = T_B = T_W: (p-1)/(3m+p-1) and (p-1)/(3m) (a third of 1f1b's bubble\n"
      "time); naive (one batch) (p-1)/p. Peak in-flight micro-batches on stage 0: gpipe m; 1f1b and zb-h1\n"
      "min(m, p); interleaved p + (p-1)/v (capped at m). Default schedule 1f1b, or interleaved with --v > 1.\n"
      "JSON keys: topic, inputs{schedule,p,m,v}, bubble_fraction_total, bubble_fraction_ideal,\n"
      "bubble_slots (in micro-batch times t_f+t_b), peak_inflight_microbatches.\n",
      run_bubble },
    { "flops", "Training FLOPs: 6ND, and with the attention term of PaLM (appendix B).",
      "--params N --tokens D [--layers L --hidden H --heads A --seq S] [--json]",
      "Formula: 6N FLOPs per token (2 forward, 4 backward) → 6ND; with attention (6N + 12·L·H·Q·T)·D,\n"
      "Q = hidden/heads, T = sequence length.\n"
      "JSON keys: topic, inputs{params,tokens,layers,hidden,heads,seq}, per_token_6n, per_token_attention,\n"
      "per_token, flops_6nd, flops_attention, flops_total, head_dim.\n",
      run_flops },
    { "mfu", "Model FLOPs utilisation.", "--flops F --time T [--hw PROFILE] [--gpus N] [--json]",
      "Formula: MFU = (F / T) / (N × peak dense bf16 FLOP/s of the profile).\n"
      "JSON keys: topic, inputs{flops,time_s,gpus,hw}, achieved_flops_per_s, peak_flops_per_s, mfu.\n",
      run_mfu },
    { "moe", "MoE capacity per expert and all-to-all bytes per rank.",
      "--tokens T --experts E --topk K --cf C --hidden H [--dtype-bytes 2] [--json]",
      "Formula: capacity = ceil(T·k/E · C); dispatch: each routed token's hidden vector crosses once per\n"
      "chosen expert: T·k·h elements, × dtype-bytes (counted once); combine the same back. Upper bound:\n"
      "no dropped tokens, every expert remote.\n"
      "JSON keys: topic, inputs{tokens,experts,topk,cf,hidden,dtype_bytes}, capacity, routed,\n"
      "dispatch_elements, dispatch_bytes, combine_bytes, total_bytes, per_token_bytes.\n",
      run_moe },
    { "plan", "Parallelism planner: (TP, PP, DP, micro-batches, ZeRO stage, recompute) ranked by modelled step time.",
      "--params P --layers L --hidden H --heads A --seq S --gbs B --gpus G [--hw PROFILE] [--top 10] [--k 12] [--json]",
      "Model:\n"
      " - Layout G = TP·PP·DP, TP innermost, then PP, DP outermost; a group uses the intra-node link if\n"
      "   all its ranks share a node, else the inter-node link (more nodes of the profile's kind if needed).\n"
      " - Candidates: TP a power of two dividing G, heads and h; PP dividing G/TP and L; DP = G/(TP·PP)\n"
      "   dividing B; micro-batch size b a power of two dividing B/DP, m = B/(DP·b); ZeRO 0..3 (at DP = 1: ZeRO 0 only);\n"
      "   recompute none/selective/full; 1F1B schedule.\n"
      " - Compute: a micro-batch's training FLOPs (6Ψ + 12·L·h·S per token), shared by the TP·PP GPUs of\n"
      "   a replica, at peak bf16; selective recompute adds the attention forward (4·L·h·S per token),\n"
      "   full recompute a whole forward (2Ψ + 4·L·h·S per token).\n"
      " - TP: Megatron's all-reduces of a micro-batch's activations (b·S·h, bf16) through a stage's layers,\n"
      "   forward and backward, as ring all-reduces (the same with recompute and with SP); PP: a\n"
      "   micro-batch's activations to the next stage\n"
      "   and their gradient back, one α-β message each way; both on each micro-batch's critical path.\n"
      " - Step: 1F1B's m micro-batches plus the pipeline's fill and drain, each slot as long as one\n"
      "   micro-batch's compute + TP + PP on a stage; then DP, not overlapped: ZeRO-0/1 all-reduce the\n"
      "   gradients once per step; ZeRO-2 reduce-scatters them per micro-batch and all-gathers the\n"
      "   parameters once; ZeRO-3 gathers the parameters for each micro-batch's forward and again for\n"
      "   its backward and reduce-scatters its gradients; each collective moves the GPU's Ψ/(TP·PP)\n"
      "   parameters' worth in bf16.\n"
      " - Memory per GPU: ZeRO states of its Ψ/(TP·PP) parameters (Nd = DP, K) + the activations of its\n"
      "   stage's layers for the micro-batches 1F1B keeps in flight on the first stage (Korthikanti, with\n"
      "   SP when TP > 1); fits if <= HBM.\n"
      " - Ranked: fitting plans by step time, then the rest. MFU = (6Ψ + 12·L·h·S)·B·S /\n"
      "   (step × G × peak): an upper bound, since compute runs at peak FLOP/s in this model.\n"
      "   Warnings: TP across nodes, m < 4·PP, out of memory.\n"
      "JSON keys: topic, inputs{...}, candidates, fitting, plans[{tp,pp,dp,m,b,zero,recompute,step_time_s,\n"
      "compute_time_s,bubble_time_s,tp_time_s,pp_time_s,dp_time_s,mem_states_bytes,mem_activation_bytes,\n"
      "mem_total_bytes,mfu,fits,warnings[tp_across_nodes|m_lt_4p|out_of_memory]}].\n",
      run_plan },
};

static void calc_usage(FILE *f, int full)
{
    fprintf(f, "usage: ringlab calc TOPIC [options] [--json]   (ringlab calc TOPIC --help for each)\n\ntopics:\n");
    for (size_t i = 0; i < sizeof topics / sizeof topics[0]; i++)
        fprintf(f, "  %-15s %s\n", topics[i].name, topics[i].summary);
    fprintf(f, "\n%s", UNITS);
    if (full) {
        fprintf(f, "\n");
        for (size_t i = 0; i < sizeof topics / sizeof topics[0]; i++) {
            fprintf(f, "calc %s %s\n%s\n", topics[i].name, topics[i].usage, topics[i].details);
        }
    }
}

int rl_cmd_calc(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "ringlab calc: name a topic\n");
        calc_usage(stderr, 0);
        return RL_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        calc_usage(stdout, 1);
        return 0;
    }
    const char *name = argv[1];
    for (size_t i = 0; i < sizeof topics / sizeof topics[0]; i++) {
        const topic *t = &topics[i];
        int k = rl_coll_parse(name);
        if (strcmp(name, t->name) == 0 || (k >= 0 && k == rl_coll_parse(t->name) && t->run == run_coll))
            return t->run(t, argc - 1, argv + 1);
    }
    fprintf(stderr, "ringlab calc: unknown topic '%s'\n", name);
    calc_usage(stderr, 0);
    return RL_EXIT_USAGE;
}
