# Planted bug: the sweep's predicted_comm uses the default hardware (NVLink) whatever --hw the
# runs use.
# step: 28.5
# caught-by: the sweep on a100-pcie and on two nodes (group link)
s|const rl_hw \*hw = rc.opts.hw ? rc.opts.hw : rl_hw_default();|const rl_hw *hw = rl_hw_default();|
