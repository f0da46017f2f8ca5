#!/usr/bin/env bats
# silent-wrongs.bats - issue 15, items 6 and 8: answers that were wrong
# with exit status 0. mlr's LIBSVM test labels mean the training file's
# classes (checked against numpy on the exported weights); the LIBSVM
# feature count is a key; the header says what is in effect on real data;
# a selection or a lost shard that can touch nothing is refused.

bats_require_minimum_version 1.5.0
load helper

PY=/usr/bin/python3

need_numpy() {
	if [ ! -x "$PY" ] || ! "$PY" -c 'import numpy' 2>/dev/null; then
		skip "python3-numpy is not installed ($PY cannot import numpy)"
	fi
}

need_jq() { command -v jq >/dev/null || skip "jq not installed"; }

# svm FILE N CLASSES SEED: N examples of 4 features; class c (one of the
# space-separated CLASSES) adds 2 to feature c+1.
svm() {
	awk -v n="$2" -v cl="$3" -v seed="$4" 'BEGIN {
		srand(seed); k = split(cl, c, " ")
		for (i = 0; i < n; i++) {
			y = c[1 + int(rand() * k)]; line = y
			for (j = 1; j <= 4; j++) {
				v = 2 * (rand() + rand() + rand() - 1.5) + (j - 1 == y ? 2 : 0)
				line = line sprintf(" %d:%.4f", j, v)
			}
			print line
		}
	}' > "$1"
}

# train.svm holds classes 0, 1, 2; test.svm only 1 and 2.
pair() {
	svm train.svm 300 "0 1 2" 3
	svm test.svm 100 "1 2" 4
}

@test "mlr: a LIBSVM test file without class 0 is scored with the training file's classes (numpy agrees)" {
	need_numpy
	pair
	scar-train -q -m mlr -n 10 --shards 2 --no-timing --data train.svm \
		--set test_data=test.svm --save w.ckpt > ev.jsonl
	scar-ckpt export --tensor weights -o w.npy w.ckpt
	got=$(grep '"type":"summary"' ev.jsonl | sed 's/.*"final_heldout":\([^,}]*\).*/\1/')
	want=$("$PY" - <<'EOF'
import numpy as np
W = np.load('w.npy').astype(np.float64)
def read(f):
    ys, rows = [], []
    for l in open(f):
        t = l.split()
        ys.append(float(t[0]))
        rows.append({int(a): float(b) for a, b in (x.split(':') for x in t[1:])})
    return ys, rows
ytr, _ = read('train.svm')
yte, rows = read('test.svm')
cls = sorted(set(ytr))            # class ids: the training file's labels, sorted
d = W.shape[0] - 1
X = np.zeros((len(rows), d))
for i, r in enumerate(rows):
    for j, v in r.items():
        X[i, j - 1] = v
pred = np.argmax(X @ W[:d] + W[d], axis=1)
y = np.array([cls.index(v) for v in yte])
print(repr(float((pred == y).mean())))
EOF
)
	echo "scar-train $got, numpy $want"
	"$PY" -c "import sys; g, w = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (abs(g - w) < 1e-12 and w > 0.5))" "$got" "$want"
}

@test "mlr: a test label the training file lacks is refused with its file:line" {
	pair
	printf '1 1:0.5\n7 2:1.0\n' >> test.svm
	run -2 --separate-stderr scar-train -q -m mlr -n 2 --shards 2 --data train.svm \
		--set test_data=test.svm
	[ "$stderr" = "scar-train: test.svm:102: label '7' is not a class of the training data" ]
	[ -z "$output" ]
}

@test "mlr: --set d=N sets the LIBSVM feature count; an index above it is refused with file:line" {
	need_jq
	pair
	printf '2 6:1.0\n' >> test.svm
	# the training file's count (4) does not hold the test file's feature 6
	run -2 --separate-stderr scar-train -q -m mlr -n 2 --shards 2 --data train.svm \
		--set test_data=test.svm
	[ "$stderr" = "scar-train: test.svm:101: index 6 above the dimension 4" ]
	scar-train -q -m mlr -n 2 --shards 2 --no-timing --data train.svm --set test_data=test.svm \
		--set d=6 --save w.ckpt > ev.jsonl
	[ "$(head -1 ev.jsonl | jq -c '[.config.d, .effective.d, .effective.n, .effective.n_test]')" = '[6,6,300,101]' ]
	[ "$(scar-ckpt info --json w.ckpt | jq -c '.tensors[] | select(.name == "weights") | .shape')" = '[7,3]' ]
	run -2 --separate-stderr scar-train -q -m mlr -n 2 --shards 2 --data train.svm \
		--set test_data=test.svm --set d=5
	[ "$stderr" = "scar-train: test.svm:101: index 6 above the dimension 5" ]
	run -2 --separate-stderr scar-train -q -m mlr -n 2 --shards 2 --data train.svm --set d=3
	[ "$stderr" = "scar-train: train.svm:1: index 4 above the dimension 3" ]
}

@test "header: on real data the configuration lists no synthetic default and 'effective' gives what is in effect" {
	need_jq
	pair
	scar-train -q -m mlr -n 1 --shards 2 --no-timing --data train.svm --set test_data=test.svm \
		--set batch=1000 --set lr=0.05 --set lr_decay=0 > ev.jsonl
	[ "$(head -1 ev.jsonl | jq -c '.config | [has("n"), has("n_test"), has("d"), has("classes"), has("sep")]')" = '[false,false,false,false,false]' ]
	[ "$(head -1 ev.jsonl | jq -c '.effective | [.n, .n_test, .d, .classes, .batch, .lr, .lr_decay, .lr_schedule]')" = \
		'[300,100,4,3,300,0.05,0,"lr / (1 + lr_decay * epoch)"]' ]
	# synthetic: the effective sizes are the configured ones
	scar-train -q -m mlr -n 1 --no-timing --set n=700 --set d=9 --set classes=4 > syn.jsonl
	[ "$(head -1 syn.jsonl | jq -c '[.config.n, .config.d, .config.classes]')" = '[700,9,4]' ]
	[ "$(head -1 syn.jsonl | jq -c '[.effective.n, .effective.d, .effective.classes]')" = '[700,9,4]' ]
	# mf on a small MovieLens file: 3 users, 4 items
	printf '1\t10\t4\t1\n1\t20\t3\t1\n2\t10\t5\t1\n2\t30\t2\t1\n3\t40\t1\t1\n3\t20\t4\t1\n1\t30\t3\t1\n2\t40\t2\t1\n3\t10\t5\t1\n1\t40\t1\t1\n' > u.data
	scar-train -q -m mf -n 1 --shards 2 --no-timing --data u.data --set test_frac=0.3 > mf.jsonl
	[ "$(head -1 mf.jsonl | jq -c '.config | [has("users"), has("items"), has("density")]')" = '[false,false,false]' ]
	[ "$(head -1 mf.jsonl | jq -c '.effective | [.users, .items, .n + .n_test, .solver]')" = '[3,4,10,"als"]' ]
	# lda on a small UCI docword file: 4 documents, 6 words
	printf '4\n6\n8\n1 1 3\n1 2 1\n2 3 2\n2 4 1\n3 5 4\n3 1 1\n4 6 2\n4 2 1\n' > docword.txt
	scar-train -q -m lda -n 1 --shards 2 --no-timing --data docword.txt --set heldout_frac=0.25 \
		--set topics=2 > lda.jsonl
	[ "$(head -1 lda.jsonl | jq -c '.config | [has("docs"), has("words"), has("doc_len")]')" = '[false,false,false]' ]
	[ "$(head -1 lda.jsonl | jq -c '.effective | [.docs + .heldout_docs, .vocab, .tokens + .heldout_tokens, .topics]')" = '[4,6,15,2]' ]
}

@test "a synthetic-only key with real data is refused, not ignored" {
	pair
	run -2 --separate-stderr scar-train -q -m mlr -n 1 --data train.svm --set n=100
	[ "$stderr" = "scar-train: mlr: key 'n' is for synthetic data; the data set fixes it" ]
	run -2 --separate-stderr scar-train -q -m mlr -n 1 --data train.svm --set classes=3
	[[ $stderr == *"key 'classes' is for synthetic data"* ]]
	run -2 --separate-stderr scar-train -q -m mlr -n 1 --set test_data=test.svm
	[ "$stderr" = "scar-train: mlr: 'test_data' goes with a LIBSVM 'data' file" ]
	printf '1\t10\t4\t1\n' > u.data
	run -2 --separate-stderr scar-train -q -m mf -n 1 --data u.data --set users=5
	[[ $stderr == *"mf: key 'users' is for synthetic data"* ]]
	run -2 --separate-stderr scar-train -q -m lda -n 1 --data docword.txt --set docs=5
	[[ $stderr == *"lda: key 'docs' is for synthetic data"* ]]
}

@test "scar-inject: a row selection outside the tensor is refused, naming tensor, rows and selection" {
	scar-train -q -m ridge -n 3 --shards 4 --save r.ckpt --events /dev/null
	for rows in 60:70 40:70 50:; do
		run -2 --separate-stderr scar-inject --noise-l2 1 --rows "$rows" r.ckpt out.ckpt
		[ "$stderr" = "scar-inject: rows $rows are out of range for tensor 'w' (50 rows) in 'r.ckpt'" ]
		[ ! -e out.ckpt ]
	done
	run -2 --separate-stderr scar-inject --noise-l2 1 --tensor w --rows 60:70 r.ckpt out.ckpt
	[ "$stderr" = "scar-inject: rows 60:70 are out of range for tensor 'w' (50 rows) in 'r.ckpt'" ]
	run -2 --separate-stderr scar-inject --lose-count 1 --rows 60:70 r.ckpt out.ckpt
	[[ $stderr == *"rows 60:70 are out of range for tensor 'w' (50 rows)"* ]]
	# a shard with no row in the range
	run -2 --separate-stderr scar-inject --noise-l2 1 --shard 1 --rows 4:5 r.ckpt out.ckpt
	[ "$stderr" = "scar-inject: rows 4:5 of tensor 'w' (50 rows) hold no row of shard 1 of 4 in 'r.ckpt'" ]
	run -2 --separate-stderr scar-inject --noise-l2 1 --shard 4 r.ckpt out.ckpt
	[ "$stderr" = "scar-inject: no shard 4 of tensor 'w' (4 shards) in 'r.ckpt'" ]
	[ ! -e out.ckpt ]
	# inside: fine, and open ends stop at the last row
	scar-inject --noise-l2 1 --rows 40: --report rep.json r.ckpt out.ckpt
	grep -q '"rows_touched":10' rep.json
	scar-inject --noise-l2 1 --shard 1 --rows 4:6 --report rep.json r.ckpt out.ckpt
	grep -q '"rows_touched":1' rep.json
}

@test "scar-ckpt export: the same checks (empty ranges, a shard without rows in the range)" {
	scar-train -q -m ridge -n 3 --shards 4 --save r.ckpt --events /dev/null
	run -2 --separate-stderr scar-ckpt export --tensor w --rows 4:4 --format json r.ckpt
	# refused by the --rows parser every tool shares, before the file is read
	[ "${stderr_lines[0]}" = "scar-ckpt: option '--rows': '4:4' is an empty range" ]
	[ -z "$output" ]
	run -2 --separate-stderr scar-ckpt export --tensor w --shard 1 --rows 0:1 --format json r.ckpt
	[ "$stderr" = "scar-ckpt: rows 0:1 of tensor 'w' (50 rows) hold no row of shard 1 of 4 in 'r.ckpt'" ]
	run -2 --separate-stderr scar-ckpt export --tensor w --rows 60:70 --format json r.ckpt
	[ "$stderr" = "scar-ckpt: rows 60:70 are out of range for tensor 'w' (50 rows) in 'r.ckpt'" ]
	run -0 scar-ckpt export --tensor w --shard 1 --rows 0:2 --format json r.ckpt
	[[ $output == *'"rows":[1]'* ]]
}

@test "scar-train: lost shards are checked against a resumed run's own shard count" {
	scar-train -q -m ridge -n 10 --shards 4 --save r4.ckpt --events /dev/null
	# 5 < the default 8 shards, but the checkpoint has 4
	run -2 --separate-stderr scar-train -q --resume r4.ckpt -n 20 --fail-at 15 --lose-shards 5
	[ "${stderr_lines[0]}" = "scar-train: option '--lose-shards': shard 5 does not exist (there are 4 shards, 0..3)" ]
	run -2 --separate-stderr scar-train -q --resume r4.ckpt -n 20 --fail-at 15 --lose-count 6
	[ "$stderr" = "scar-train: cannot lose 6 of 4 shards" ]
	run -2 --separate-stderr scar-train -q -m ridge -n 20 --fail-at 15 --lose-shards 8
	[ "${stderr_lines[0]}" = "scar-train: option '--lose-shards': shard 8 does not exist (there are 8 shards, 0..7)" ]
	run -0 scar-train -q --resume r4.ckpt -n 20 --no-timing --fail-at 15 --lose-shards 3
	[[ $output == *'"type":"recovery","iter":15,"strategy":"partial","shards":[3]'* ]]
}
