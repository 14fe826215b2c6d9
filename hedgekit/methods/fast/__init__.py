"""What the kit runs where a plain page of `hedgekit.methods` would be too slow, too large or make a GPU wait on the
host: one module per page, each form saying which plain function it is the fast form of and held equal to it by
tests/methods/fast/. Beside the forms, what runs or budgets them: SPE's head (`spe.SPE`) and HIB's memory budget
(`hib.check_pair_memory`)."""
