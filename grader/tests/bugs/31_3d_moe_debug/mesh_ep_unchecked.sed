# Planted bug: the size check covers dp, pp, tp and cp but forgets ep: a negative ep that divides dp
# (ep = -2 with dp = 4) is accepted.
# step: 31.1
# caught-by: invalid shapes refused with a message
s/ || s->cp < 1 || s->ep < 1)$/ || s->cp < 1)/
