# Planted bug: pp_build_schedule never records the schedule's kind (s->kind stays
# rl_pp_schedule_empty's RL_PP_CUSTOM): the op lists are right, but the pipeline view and
# every tool that reads s->kind call it a custom schedule.
# step: 30.4
# caught-by: schedules validate (dependencies, no deadlock)
/^rl_pp_schedule \*pp_build_schedule(/,/^}/{
/^    s->kind = kind;$/d
}
