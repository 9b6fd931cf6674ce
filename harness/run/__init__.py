"""Running cases: the task protocol (``task``), the isolated worker (``isolation``, ``worker``),
the references (``references``) and the runner that ties them to the oracles (``runner``)."""

import warnings

# Once JAX has run, it warns at every fork that runs Python in the child. The workers' only such
# fork is ``compiler.iree.run_compiler``'s: its ``preexec_fn`` makes iree-compile die with its
# worker (one ``prctl`` call through ctypes, which takes no lock another thread could hold;
# glibc resets malloc's locks in a forked child) and then execs. The harness's own processes
# are spawned, never forked. The warning repeated through a 30-minute IREE campaign's log.
warnings.filterwarnings("ignore", r"os\.fork\(\) was called", RuntimeWarning)
# NumPy warns where var/std divide by max(n - ddof, 0) = 0; the generator draws such ddof on
# purpose (the answer is inf or NaN, judged like any other), so the warning is no news.
warnings.filterwarnings("ignore", r"Degrees of freedom <= 0", RuntimeWarning)
# Inputs hold signaling NaNs on purpose (``strategies.gen.values.nan_bits``), and every
# conversion of one raises the invalid flag: the oracles widen arrays to judge them. A
# reference that watches its casts (``references._evaluate``) records them on its own.
warnings.filterwarnings("ignore", r"invalid value encountered in cast", RuntimeWarning)
