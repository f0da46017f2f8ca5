#!/bin/sh
# valgrind-report.sh DIR - sum up the memcheck logs of `make valgrind-check`:
# one log per tool invocation, named TOOL.TESTFILE.TESTNUMBER.PID.TIME.log
# (SCAR_WRAP_ID, tests/bats/helper.bash). Prints the invocations per tool
# and per test file, the errors and the bytes lost, and every log that has
# an error; exits 1 when one has.
set -eu
dir=${1:?usage: valgrind-report.sh DIR}
cd "$dir"
n=$(find . -maxdepth 1 -name '*.log' | wc -l)
if [ "$n" -eq 0 ]; then
	echo "valgrind: no logs in '$dir': no tool ran under the wrapper" >&2
	exit 1
fi
echo "valgrind: $n tool invocations under memcheck"
echo "valgrind: per tool: $(find . -maxdepth 1 -name '*.log' | sed 's|^\./||; s|\..*||' |
	sort | uniq -c | awk '{ printf "%s%s %s", sep, $2, $1; sep = ", " }')"
echo "valgrind: per test file: $(find . -maxdepth 1 -name '*.log' | sed 's|^\./[^.]*\.||; s|\..*||' |
	sort | uniq -c | awk '{ printf "%s%s %s", sep, $2, $1; sep = ", " }')"
# One line per log: name, errors, bytes definitely, indirectly, possibly
# lost, still reachable, whether it ran to its summary (a process killed by
# SIGKILL writes none), and errors suppressed (tests/valgrind-openmpi.supp).
find . -maxdepth 1 -name '*.log' -print | sort | while IFS= read -r f; do
	awk -v f="${f#./}" '
	function num(s) { gsub(/,/, "", s); return s + 0 }
	/ERROR SUMMARY:/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "SUMMARY:") err = num($(i + 1))
			if ($i == "(suppressed:") sup = num($(i + 1))
		}
		done = 1
	}
	/definitely lost:/ { for (i = 1; i <= NF; i++) if ($i == "lost:") def = num($(i + 1)) }
	/indirectly lost:/ { for (i = 1; i <= NF; i++) if ($i == "lost:") ind = num($(i + 1)) }
	/possibly lost:/ { for (i = 1; i <= NF; i++) if ($i == "lost:") pos = num($(i + 1)) }
	/still reachable:/ { for (i = 1; i <= NF; i++) if ($i == "reachable:") rea = num($(i + 1)) }
	END { printf "%s %d %d %d %d %d %d %d\n", f, err, def, ind, pos, rea, done, sup }' "$f"
done > summary.txt
awk '
{ err += $2; def += $3; ind += $4; pos += $5; rea += $6; sup += $8 }
$8 > 0 { supn++ }
$2 > 0 { bad++ }
!$7 { unfinished++ }
END {
	printf "valgrind: %d errors in %d invocations; lost: %d bytes definitely, %d indirectly, %d possibly\n", err, bad, def, ind, pos
	printf "valgrind: still reachable at exit (not an error): %d bytes in all\n", rea
	printf "valgrind: %d invocations ended without a summary (killed by SIGKILL)\n", unfinished
	printf "valgrind: %d errors suppressed (Open MPI'"'"'s, in %d MPI ranks)\n", sup, supn
}' summary.txt
bad=$(awk '$2 > 0 { print $1 }' summary.txt)
[ -n "$bad" ] || exit 0
for f in $bad; do
	echo "---- $f"
	cat "$f"
done
exit 1
