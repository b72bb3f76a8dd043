# Planted bug: the rank count is refused only when it is 0 (a guard against dividing by
# zero); a negative n gives negative bytes instead of RL_ERR_ARG.
# step: 29.1
# caught-by: bad input refused, group ignored outside hsdp
s/|| n < 1/|| n == 0/
