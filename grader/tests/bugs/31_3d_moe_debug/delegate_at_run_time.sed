# Planted bug (an attack the object check cannot see): diagnose also asks the runtime's own
# analysis, through a pointer the compiler cannot follow. The runtime watches its denied
# functions as they are called, and the judge fails every test that ran it.
# step: 31.4
# caught-by: hidden hang scenarios: culprit rank and seq
# caught-by: hidden mismatch scenarios
# caught-by: several anomalies per dump: lowest seq, earliest across communicators
# caught-by: send/recv never matched: RL_DIAG_P2P
/^int diagnose(const rl_diag_flight \*fl, diag_result \*out)$/,/^{$/ {
  /^{$/ a\
    if (fl) {\
        int (*volatile analyze)(const rl_diag_flight *, rl_diag_result *) = rl_diag_flight_analyze;\
        rl_diag_result r;\
        (void)analyze(fl, &r);\
    }
}
