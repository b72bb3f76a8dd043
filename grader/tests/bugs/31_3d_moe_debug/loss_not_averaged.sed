# Planted bug: td_train_step reports the SUM of the m micro-batch losses instead of their mean.
# step: 31.2
# caught-by: reported loss = the mean micro-batch loss
s|\*loss = s == e->cfg.pp - 1 ? (float)(e->loss_sum / e->cfg.micro_batches) : 0.0f;|*loss = s == e->cfg.pp - 1 ? (float)e->loss_sum : 0.0f;|
