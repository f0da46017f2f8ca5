#!/bin/sh
# scar-plot - draw scar-train event streams (scar-events(7)) as a PNG: the
# objective, or the distance to the optimum, against iterations, with
# failures, recoveries and checkpoints marked, and the bound's envelope
# where the contraction rate is known. Installed with the tools; the manual
# is scar-plot(1). Needs jq and gnuplot (with the pngcairo terminal).
#
# Exit status: 0 the PNG was written, 2 usage error, bad input or trouble.
set -eu

prog=scar-plot
version=0.1.0

usage() {
	cat <<'EOF'
usage: scar-plot [--c C] [--D D] [--help] [--linear | --log] [-o OUT] [--size WxH]
                 [--title TEXT] [--version] [--y objective | dist] [STREAM... | -]
EOF
}
help() {
	usage
	cat <<'EOF'

Draw the objective (or the distance to the optimum) of scar-train event streams
against iterations as a PNG: one line per stream, failures as dashed vertical
lines, recoveries and checkpoints as points, and with --y dist the bound's
envelope c^k (D + sum_t<k ||delta_t|| / c^t) where c is known.

  --c C           contraction rate for the envelope (default: the header's, ridge)
  --D D           distance to the optimum at iteration 0 (default: the stream's)
  --help          show this help and exit
  --linear        linear y axis (the default for --y objective)
  --log           logarithmic y axis (the default for --y dist)
  -o, --output OUT  write the PNG to OUT (default stdout, never a terminal)
  --size WxH      the image's size in pixels (default 800x500; 200..8000 each)
  --title TEXT    the title (default: the model and the objective's name)
  --version       show the version and exit
  --y Y           objective (default) or dist (dist_opt, the distance to x*)
STREAM is a file of JSON lines as scar-train writes them; '-' or none reads stdin.
EOF
}
die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 2
}
usage_error() {
	printf '%s: %s\n' "$prog" "$*" >&2
	usage >&2
	printf "try '%s --help'\n" "$prog" >&2
	exit 2
}
# a positive real number, as C's strtod would read it
is_number() {
	printf '%s\n' "$1" | grep -Eq '^[+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$'
}

out='' size=800x500 title='' y=objective scale='' c='' D=''
while [ $# -gt 0 ]; do
	case $1 in
	--c=* | --D=* | --output=* | --size=* | --title=* | --y=*)
		opt=${1%%=*} arg=${1#*=}
		shift
		set -- "$opt" "$arg" "$@"
		continue ;;
	--c | --D | -o | --output | --size | --title | --y)
		[ $# -ge 2 ] || usage_error "option '$1' needs an argument"
		case $1 in
		--c) c=$2 ;;
		--D) D=$2 ;;
		-o | --output) out=$2 ;;
		--size) size=$2 ;;
		--title) title=$2 ;;
		--y) y=$2 ;;
		esac
		shift 2 ;;
	-o?*) out=${1#-o}; shift ;;
	--log) scale=log; shift ;;
	--linear) scale=linear; shift ;;
	-h | --help) help; exit 0 ;;
	--version) echo "scar-plot $version"; exit 0 ;;
	--) shift; break ;;
	-) break ;;
	-*) usage_error "unknown option '$1'" ;;
	*) break ;;
	esac
done
for a in "$@"; do
	case $a in -?*) usage_error "option '$a' after the streams: options go first" ;; esac
done

case $y in
objective | dist) ;;
*) usage_error "option '--y': '$y' is not objective or dist" ;;
esac
[ -n "$scale" ] || { [ "$y" = dist ] && scale=log || scale=linear; }
w=${size%%[xX]*} h=${size#*[xX]}
case $size in
*[xX]*) ;;
*) w='' ;;
esac
case "$w" in '' | *[!0-9]*) w='' ;; esac
case "$h" in '' | *[!0-9]*) w='' ;; esac
case "$w" in '') usage_error "option '--size': '$size' is not WIDTHxHEIGHT in pixels, as 800x500" ;; esac
if [ "$w" -lt 200 ] || [ "$w" -gt 8000 ] || [ "$h" -lt 200 ] || [ "$h" -gt 8000 ]; then
	usage_error "option '--size': '$size' is out of range (200..8000 pixels each way)"
fi
if [ -n "$c" ]; then
	is_number "$c" || usage_error "option '--c': '$c' is not a number"
	awk -v c="$c" 'BEGIN { exit !(c > 0 && c < 1) }' ||
		usage_error "option '--c': '$c' is out of range (a contraction rate: 0 < c < 1)"
fi
if [ -n "$D" ]; then
	is_number "$D" || usage_error "option '--D': '$D' is not a number"
	awk -v d="$D" 'BEGIN { exit !(d > 0) }' || usage_error "option '--D': '$D' is out of range (above 0)"
fi
if [ -n "$c$D" ] && [ "$y" != dist ]; then
	usage_error "options '--c' and '--D' draw the envelope of the distance: give '--y dist' too"
fi

[ $# -gt 0 ] || set -- -
nstdin=0
for a in "$@"; do [ "$a" != - ] || nstdin=$((nstdin + 1)); done
[ "$nstdin" -le 1 ] || usage_error "standard input ('-') can be read once only"
if [ "$nstdin" -eq 1 ] && [ -t 0 ]; then
	usage_error "no stream given and standard input is a terminal"
fi
if [ -z "$out" ] || [ "$out" = - ]; then
	[ ! -t 1 ] || die "refusing to write a PNG to a terminal: give -o FILE, or redirect"
fi

for t in jq gnuplot; do
	command -v "$t" >/dev/null 2>&1 ||
		die "'$t' not found in PATH (apt-get install jq gnuplot-nox, or 'make deps')"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/scar-plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 2' HUP INT TERM

# The records a plot needs, one per line, tab-separated, tagged by type.
# Fails on the first line that is not a JSON object, naming it. (Not
# try/catch: jq 1.6's catch also catches the errors raised after it.)
# shellcheck disable=SC2016 # jq's $variables, not the shell's
JQ_RECORDS='
input_line_number as $n
| ([fromjson?] | if length == 0 then error("line \($n): not JSON") else .[0] end) as $r
| if ($r | type) != "object" then error("line \($n): not a JSON object")
  elif $n == 1 and ($r.type != "header" or $r.format != "scar-events") then
	error("line 1: not a scar-events header (the stream scar-train writes on stdout)")
  elif $r.type == "header" and $n != 1 then
	error("line \($n): a second header (two streams joined into one file?)")
  elif $r.type == "header" and (($r.version | type) != "number" or $r.version > 1) then
	error("line 1: scar-events version \($r.version) is newer than this scar-plot reads (1)")
  elif $r.type == "header" then
	["H", ($r.model // "-"), ($r.objective // "objective"), ($r.contraction // "-")]
  elif $r.type == "iteration" then
	if ($r.iter | type) != "number" then error("line \($n): an iteration record without iter") else . end
	| ["I", $r.iter, ($r.objective // "-"), ($r.dist_opt // "-")]
  elif $r.type == "checkpoint" then ["C", $r.iter, ($r.kind // "full")]
  elif $r.type == "failure" then ["F", $r.iter]
  elif $r.type == "recovery" then ["R", $r.iter, ($r.objective // "-"), ($r.delta_norm // 0)]
  else empty end
| map(tostring) | join("\t")'

# Split the records on stdin into the data files $tmp/$1.*: iterations
# (iter y), checkpoints full and partial, recoveries (iter y), failures,
# envelope; and $tmp/$1.meta (model, objective name, last iteration).
# $2 names the stream in messages.
split_stream() {
	awk -F '\t' -v y="$y" -v scale="$scale" -v c="$c" -v D="$D" -v pre="$tmp/$1" -v name="$2" '
	function fail(msg) { print msg > "/dev/stderr"; bad = 1; exit 2 }
	$1 == "H" { model = $2; objname = $3; hc = $4; next }
	$1 == "I" {
		v = (y == "dist") ? $4 : $3
		if (v == "-") {
			if (y == "dist") fail("'\''" name "'\'': iteration " $2 " has no dist_opt (only workloads that know their optimum, such as ridge, record it): plot --y objective")
			next		# a diverged record: no finite objective
		}
		if (scale == "log" && v + 0 <= 0)
			fail("'\''" name "'\'': " (y == "dist" ? "dist_opt" : "the objective") " is " v " at iteration " $2 ", not above 0: a log axis cannot show it (use --linear)")
		at[$2 + 0] = v; n++; last = $2 + 0
		if (n == 1) { first = v; firstiter = $2 + 0 }
		print $2 "\t" v > (pre ".iter")
		next
	}
	$1 == "C" { ck[++nck] = $2 + 0; ckkind[nck] = $3; next }
	$1 == "F" { print $2 > (pre ".fail"); next }
	$1 == "R" {
		rec[++nrec] = $2 + 0; recobj[nrec] = $3
		delta[$2 + 0] += $4
		# the line drops (or jumps) to the recovered state at the same clock
		if (y == "objective" && $3 != "-") {
			if (scale == "log" && $3 + 0 <= 0)
				fail("'\''" name "'\'': the objective is " $3 " after the recovery at iteration " $2 ", not above 0: a log axis cannot show it (use --linear)")
			print $2 "\t" $3 > (pre ".iter")
		}
		next
	}
	END {
		if (bad) exit 2
		if (n == 0) fail("'\''" name "'\'': no iteration records to plot")
		for (i = 1; i <= nck; i++)
			if (ck[i] in at)
				print ck[i] "\t" at[ck[i]] > (pre (ckkind[i] == "partial" ? ".ckpart" : ".ckfull"))
		for (i = 1; i <= nrec; i++) {
			# the objective of the recovered state is in the record; its
			# distance is not, so it shows on the first record after it
			if (y == "objective" && recobj[i] != "-")
				print rec[i] "\t" recobj[i] > (pre ".rec")
			else if (y == "dist" && (rec[i] + 1) in at)
				print rec[i] + 1 "\t" at[rec[i] + 1] > (pre ".rec")
		}
		cc = (c != "") ? c : hc
		if (y == "dist" && cc != "-" && cc != "") {
			# c^k (D + sum_{t<k} delta_t / c^t), step by step: a perturbation
			# at clock t shows from t + 1
			e = (D != "") ? D : first
			for (k = firstiter; k <= last; k++) {
				print k "\t" e > (pre ".env")
				e = cc * (e + delta[k])
			}
		}
		print model "\t" objname "\t" last > (pre ".meta")
	}'
}

i=0
for a in "$@"; do
	i=$((i + 1))
	src=$a name=$a
	if [ "$a" = - ]; then
		src=$tmp/stdin name='standard input'
		cat > "$src"
	elif [ -d "$a" ]; then
		die "'$a' is a directory, not an event stream"
	elif [ ! -r "$a" ]; then
		[ -e "$a" ] && die "cannot read '$a': Permission denied"
		die "cannot open '$a': No such file or directory"
	fi
	# a checkpoint is the likeliest wrong file: say so
	if [ "$(head -c 8 "$src" | od -An -tx1 | tr -d ' \n')" = 8953434152434b0a ]; then
		die "'$name' is a scar checkpoint, not an event stream (plot what scar-train writes on stdout)"
	fi
	[ -s "$src" ] || die "'$name' is empty: no event stream"
	# (jq 1.6 exits 0 when a later line went well: its messages decide)
	if ! jq -R -r "$JQ_RECORDS" < "$src" > "$tmp/s$i.tsv" 2> "$tmp/jq.err" || [ -s "$tmp/jq.err" ]; then
		msg=$(sed -n '1s/^jq: error ([^)]*): //p' "$tmp/jq.err")
		die "'$name': ${msg:-$(head -n 1 "$tmp/jq.err")}"
	fi
	if ! split_stream "s$i" "$name" < "$tmp/s$i.tsv" 2> "$tmp/awk.err"; then
		die "$(sed 's/^awk: //' "$tmp/awk.err" | head -n 1)"
	fi
	label=$name
	printf '%s\n' "$label" > "$tmp/s$i.label"
done
n=$i

# gnuplot strings in single quotes: a quote is doubled
gq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/''/g")"; }

IFS=$(printf '\t') read -r model objname _ < "$tmp/s1.meta"
if [ -z "$title" ]; then
	if [ "$y" = dist ]; then title='distance to the optimum'; else title=$objname; fi
	# a stream of another trainer may name no model
	[ "$model" = - ] || title="$model: $title"
fi
ylabel=$objname
[ "$y" = objective ] || ylabel='||x(k) - x*||  (dist_opt)'

# the colour of stream $1, eight in turn
colour() {
	case $(( ($1 - 1) % 8 )) in
	0) echo '#1f77b4' ;; 1) echo '#d62728' ;; 2) echo '#2ca02c' ;; 3) echo '#9467bd' ;;
	4) echo '#ff7f0e' ;; 5) echo '#17becf' ;; 6) echo '#8c564b' ;; *) echo '#e377c2' ;;
	esac
}
{
	echo "set terminal pngcairo size $w,$h noenhanced font ',10'"
	echo "set output $(gq "$tmp/out.png")"
	echo "set title $(gq "$title")"
	echo "set xlabel 'iteration'"
	echo "set ylabel $(gq "$ylabel")"
	echo "set grid"
	echo "set key top right"
	if [ "$scale" = log ]; then echo "set logscale y"; echo "set format y '%g'"; fi
	plots=''
	i=0
	while [ "$i" -lt "$n" ]; do
		i=$((i + 1))
		col=$(colour "$i")
		label=$(cat "$tmp/s$i.label")
		if [ -s "$tmp/s$i.fail" ]; then
			while read -r x; do
				echo "set arrow from $x, graph 0 to $x, graph 1 nohead dashtype 2 linecolor rgb '$col'"
			done < "$tmp/s$i.fail"
		fi
		p="$(gq "$tmp/s$i.iter") using 1:2 with lines linewidth 2 linecolor rgb '$col' title $(gq "$label")"
		[ ! -s "$tmp/s$i.env" ] || p="$p, $(gq "$tmp/s$i.env") using 1:2 with lines dashtype 3 linecolor rgb '$col' title $(gq "$label: bound envelope")"
		[ ! -s "$tmp/s$i.ckfull" ] || p="$p, $(gq "$tmp/s$i.ckfull") using 1:2 with points pointtype 5 pointsize 0.7 linecolor rgb '$col' notitle"
		[ ! -s "$tmp/s$i.ckpart" ] || p="$p, $(gq "$tmp/s$i.ckpart") using 1:2 with points pointtype 9 pointsize 0.6 linecolor rgb '$col' notitle"
		[ ! -s "$tmp/s$i.rec" ] || p="$p, $(gq "$tmp/s$i.rec") using 1:2 with points pointtype 7 pointsize 1.4 linecolor rgb '$col' notitle"
		plots="${plots:+$plots, }$p"
	done
	# the legend of the marks, once, in black
	plots="$plots, NaN with points pointtype 5 pointsize 0.7 linecolor rgb 'black' title 'full checkpoint'"
	plots="$plots, NaN with points pointtype 9 pointsize 0.6 linecolor rgb 'black' title 'partial checkpoint'"
	plots="$plots, NaN with lines dashtype 2 linecolor rgb 'black' title 'failure'"
	plots="$plots, NaN with points pointtype 7 pointsize 1.4 linecolor rgb 'black' title 'recovery'"
	echo "plot $plots"
} > "$tmp/plot.gp"

if ! gnuplot "$tmp/plot.gp" 2> "$tmp/gnuplot.err" || [ ! -s "$tmp/out.png" ]; then
	sed 's/^/scar-plot: gnuplot: /' "$tmp/gnuplot.err" >&2
	die "gnuplot could not draw the plot (is its pngcairo terminal there? apt-get install gnuplot-nox)"
fi

if [ -z "$out" ] || [ "$out" = - ]; then
	cat "$tmp/out.png" || die "cannot write the PNG to standard output"
else
	# atomically: a reader never sees half a PNG
	dir=$(dirname -- "$out")
	[ -d "$dir" ] || die "cannot write '$out': No such file or directory"
	part=$(mktemp "$dir/.scar-plot.XXXXXX") || die "cannot write in '$dir'"
	if ! cat "$tmp/out.png" > "$part" || ! chmod 644 "$part" || ! mv -f -- "$part" "$out"; then
		rm -f -- "$part"
		die "cannot write '$out'"
	fi
fi
