# SPDX-License-Identifier: MIT
# Helpers every benchmark script sources (run from the repository root).

# median: the median of the numbers on stdin, one a line ("" when none).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# interpreter X.Y: the pyenv CPython X.Y, or nothing.
interpreter() {
	local root
	root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
	ls -d "$root"/versions/"$1".*/bin/python"$1" 2>/dev/null | head -n 1
}
