#!/bin/sh
# same-output.sh BASETREE NEWTREE - the safety net of a restructuring: run a
# matrix of deterministic commands (every model, policy and recovery, resume,
# every scar-ckpt subcommand, scar-diff, scar-inject, scar-bound, small runs
# on the real data of `make data`, MPI P = 1, 2, 4 when mpirun is there) with
# the built tools of BASETREE (e.g. a `git worktree` of the commit before the
# change, built with make) and of NEWTREE, each side in its own scratch
# directory, and report every case whose stdout, stderr, exit status or
# written files differ byte for byte. Exit 0 when none does. About two
# minutes on two cores. SAME_ONLY=REGEX runs only the cases whose name
# matches. (Written for issue 17; README, Layout.)
set -u
base=$(cd "${1:?usage: same-output.sh BASETREE NEWTREE}" && pwd)
new=$(cd "${2:?usage: same-output.sh BASETREE NEWTREE}" && pwd)
data=${SCAR_DATA:-$HOME/.cache/scar}
work=$(mktemp -d "${TMPDIR:-/tmp}/same-output.XXXXXX")
only=${SAME_ONLY:-.}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mpi="mpirun --oversubscribe -np"
fail=0 n=0

# case NAME 'COMMANDS' - $B is the side's tree, $D the real data; runs in a fresh dir.
case_() {
	name=$1 cmds=$2
	echo "$name" | grep -Eq "$only" || return 0
	n=$((n + 1))
	for side in base new; do
		eval "tree=\$$side"
		d=$work/$side/$name
		mkdir -p "$d"
		(cd "$d" && B=$tree D=$data sh -c "$cmds" > ../$name.out 2> ../$name.err; echo $? > ../$name.rc)
		# strip the tree path from messages (absolute paths of binaries)
		sed -i "s#$tree#TREE#g" "$work/$side/$name.err" "$work/$side/$name.out"
		(cd "$d" && find . -type f ! -name '.scar.lock' | LC_ALL=C sort | while read -r f; do
			printf '%s %s\n' "$(sha256sum < "$f" | cut -c1-16)" "$f"; done) > "$work/$side/$name.files"
	done
	for x in out err rc files; do
		if ! cmp -s "$work/base/$name.$x" "$work/new/$name.$x"; then
			echo "DIFF $name ($x):"
			diff "$work/base/$name.$x" "$work/new/$name.$x" | head -8
			fail=$((fail + 1))
			break
		fi
	done
}

T='--no-timing -q'
for m in mlr ridge mf lda; do
	case_ "$m-plain" "\$B/scar-train -m $m -n 12 $T"
	case_ "$m-full-fail" "\$B/scar-train -m $m -n 20 --policy full --interval 4 --fail-at 9 --checkpoint-dir run $T --cost --save fin.ckpt"
	for p in round-robin random priority; do
		case_ "$m-$p" "\$B/scar-train -m $m -n 20 --policy $p --interval 4 --fraction 1/2 --fail-at 7,13 --lose-count 2 $T --cost"
	done
	for r in full none; do
		case_ "$m-rec-$r" "\$B/scar-train -m $m -n 16 --policy full --interval 4 --fail-at 6 --recovery $r $T"
	done
	case_ "$m-resume" "\$B/scar-train -m $m -n 10 --policy priority --interval 4 --checkpoint-dir run $T > a.jsonl; \$B/scar-train --resume run -n 20 --checkpoint-dir run --policy priority --interval 4 $T; \$B/scar-ckpt ls run; \$B/scar-ckpt ls --json run"
	case_ "$m-resume-full" "\$B/scar-train -m $m -n 10 --policy full --interval 4 --checkpoint-dir run $T > a.jsonl; \$B/scar-train --resume run -n 20 --checkpoint-dir run --fail-at 14 $T --cost; \$B/scar-train --resume run/ckpt-0000000004.ckpt -n 9 $T --save -| \$B/scar-ckpt info -"
done
case_ mf-sgd "\$B/scar-train -m mf --set solver=sgd -n 12 --policy round-robin --interval 4 --fail-at 5 $T"
case_ fail-prob "\$B/scar-train -m mlr -n 30 --fail-prob 0.1 --fail-seed 3 --policy random --interval 4 $T --cost"
case_ lose-shards "\$B/scar-train -m mlr -n 12 --policy full --interval 4 --fail-at 6 --lose-shards 1,3 $T"
case_ bad-opts "\$B/scar-train -m nope; \$B/scar-train --fraction 1/3 --policy priority; \$B/scar-train --set lr=x -m ridge; \$B/scar-ckpt export --rows 3:3 none.ckpt; \$B/scar-inject --rows x"

# the checkpoint tools over a trained checkpoint
pre='$B/scar-train -m mlr -n 8 --policy full --interval 4 --checkpoint-dir run --save a.ckpt -q --no-timing > /dev/null; $B/scar-train -m mlr -n 9 --save b.ckpt -q --no-timing > /dev/null'
case_ ckpt-info "$pre; \$B/scar-ckpt info a.ckpt; \$B/scar-ckpt info --json a.ckpt; \$B/scar-ckpt verify a.ckpt run/*.ckpt"
case_ ckpt-export "$pre; for f in raw npy json safetensors; do \$B/scar-ckpt export --format \$f --tensor weights -o w.\$f a.ckpt; done; \$B/scar-ckpt export --tensor weights --rows 2:5 --format json a.ckpt; \$B/scar-ckpt export --tensor weights --shard 1 --format npy a.ckpt | od -c | tail -3"
case_ ckpt-import "$pre; \$B/scar-ckpt export --format npy --tensor weights -o w.npy a.ckpt; \$B/scar-ckpt import --no-sync --shards 4 -o i.ckpt w.npy; \$B/scar-ckpt import --no-sync --dtype f64 -o j.ckpt w.npy; \$B/scar-ckpt info i.ckpt; \$B/scar-ckpt info --json j.ckpt"
case_ ckpt-convert "$pre; \$B/scar-ckpt convert --no-compress a.ckpt c1.ckpt; \$B/scar-ckpt convert --shards 3 a.ckpt c2.ckpt; \$B/scar-ckpt info c2.ckpt"
case_ ckpt-apply "\$B/scar-train -m mf -n 12 --policy round-robin --interval 4 --checkpoint-dir run -q --no-timing > /dev/null; \$B/scar-ckpt apply -o v.ckpt run/*.ckpt; \$B/scar-ckpt info v.ckpt"
case_ diff "$pre; \$B/scar-diff --json a.ckpt b.ckpt; \$B/scar-diff --text --all a.ckpt b.ckpt; \$B/scar-diff --per row --top 3 a.ckpt b.ckpt | tail -3; \$B/scar-diff a.ckpt a.ckpt; echo rc=\$?"
case_ inject "$pre; \$B/scar-inject --lose-shards 0,2-3 --reset from=b.ckpt a.ckpt o1.ckpt; \$B/scar-inject --noise-rel 0.1 --seed 5 a.ckpt o2.ckpt; \$B/scar-inject --bitflip-count 7 --bits mantissa a.ckpt o3.ckpt; \$B/scar-inject --quantize bf16 --rows 1:9 a.ckpt o4.ckpt; \$B/scar-inject --lose-fraction 1/4 --reset init a.ckpt o5.ckpt; \$B/scar-diff --json a.ckpt o5.ckpt"
case_ bound "\$B/scar-train -m ridge -n 40 --no-timing -q > ref.jsonl; \$B/scar-train -m ridge -n 40 --policy priority --interval 8 --fail-at 12 --no-timing -q > pert.jsonl; \$B/scar-bound fit ref.jsonl; \$B/scar-bound fit --json ref.jsonl; \$B/scar-bound check ref.jsonl pert.jsonl; \$B/scar-bound check --json ref.jsonl pert.jsonl; \$B/scar-bound evaluate --json -c 0.9 -D 3 --delta 0.5@10 2>&1; \$B/scar-bound plan --json --c 0.95 --budget 0.1 --fail-rate 0.01 2>&1"

# real data, small
case_ real-mlr "\$B/scar-train -m mlr --data \$D/fashion-mnist -n 3 --set batch=2000 --fraction 1/2 --policy priority --interval 2 --fail-at 2 $T"
case_ real-mf "\$B/scar-train -m mf --data \$D/movielens/ratings.csv -n 4 --policy full --interval 2 --fail-at 3 $T"

# MPI: P = 1, 2, 4 with rank checkpoints, failure, cost and resume
if command -v mpirun > /dev/null 2>&1; then
	for m in ridge mlr mf lda; do
		for P in 1 2 4; do
			case_ "mpi-$m-$P" "$mpi $P \$B/scar-train -m $m -n 12 --policy priority --interval 4 --fail-at 6 --checkpoint-dir run $T --cost; $mpi $P \$B/scar-train -m $m -n 12 --policy full --interval 4 --checkpoint-dir full $T --save fin.ckpt; $mpi $P \$B/scar-train --resume full -n 16 $T; \$B/scar-ckpt info full/ckpt-0000000008.manifest; $mpi $P \$B/scar-train --resume run -n 16 --checkpoint-dir run $T; \$B/scar-ckpt ls run; \$B/scar-ckpt verify run/*.manifest"
		done
	done
	case_ mpi-mf-sgd "$mpi 2 \$B/scar-train -m mf --set solver=sgd --set workers=4 -n 8 --policy full --interval 4 --fail-at 5 $T"
fi

if [ "$fail" -eq 0 ]; then
	echo "same-output: $n cases, all byte-identical"
	rm -rf "$work"
else
	echo "same-output: $n cases, $fail differ (outputs in $work)"
	exit 1
fi
