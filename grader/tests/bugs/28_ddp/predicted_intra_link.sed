# Planted bug: predicted_comm always uses the profile's intra-node link, also when the run's
# ranks span two nodes (their ring then runs at the inter-node link's speed).
# step: 28.5
# caught-by: the sweep on a100-pcie and on two nodes (group link)
/^    int granks\[DDP_MAX_RANKS\];$/,/^        granks\[q\] = q;$/d
s|const rl_link \*link = rl_hw_group_link(hw, granks, ranks);|const rl_link *link = \&hw->intra;|
