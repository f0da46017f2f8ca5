#!/usr/bin/env bats
# data2.bats - the second real data set of each model: tools/rdata2tsv (R
# lazy-load databases, for lme4's InstEval), spam2uci --libsvm (SpamAssassin's
# spam/ham labels), the State of the Union corpus, their place in
# tools/fetch-data.sh (on fixtures, no network), and 30-iteration runs of
# scar-train on the real files when `make data` has put them in the cache.

bats_require_minimum_version 1.5.0
load helper

R2T="$SCAR_ROOT/tools/rdata2tsv"
S2U="$SCAR_ROOT/tools/spam2uci"
FETCH="$SCAR_ROOT/tools/fetch-data.sh"
D="$FIXTURES/data"

r2t() {
	${SCAR_WRAP:-} "$R2T" "$@"
}

s2u() {
	${SCAR_WRAP:-} "$S2U" "$@"
}

# The first and last value of a field over the iteration events of a run.
first_last() {
	jq -r "select(.type == \"iteration\") | .$1" "$2" | sed -n '1p;$p' | tr '\n' ' '
}

@test "rdata2tsv --help prints the usage on stdout and every long option" {
	run -0 r2t --help
	assert_line --index 0 "usage: rdata2tsv --object name --columns a,b,... [--output file] dir/Rdata"
	for o in $(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", .*/\1/p' "$SCAR_ROOT/tools/rdata2tsv.c"); do
		assert_output --partial -- "--$o"
	done
}

@test "rdata2tsv misuse is a usage error" {
	run -2 r2t --no-such-option
	assert_output --partial "try 'rdata2tsv --help'"
	run -2 r2t --columns s "$D/rdata/Rdata"
	assert_output --partial "--object and --columns are required"
	run -2 r2t --object InstEval --columns s
	assert_output --partial "give one database"
}

@test "rdata2tsv writes a data frame's columns: factor codes and integers, in the order asked" {
	run -0 r2t --object InstEval --columns s,d,y "$D/rdata/Rdata"
	assert_output "$(printf '1\t2\t5\n1\t1\t3\n2\t1\t4\n3\t2\t1\n3\t1\t2')"
	run -0 r2t --object InstEval --columns y,s --output out.tsv "$D/rdata/Rdata"
	assert_output ""
	[ "$(head -n 1 out.tsv)" = "$(printf '5\t1')" ] && [ "$(wc -l < out.tsv)" -eq 5 ]
	[ ! -e out.tsv.tmp ]
}

@test "rdata2tsv refuses what it cannot write, and leaves no output" {
	run -2 r2t --object withna --columns s,y --output out.tsv "$D/rdata/Rdata"
	assert_output "rdata2tsv: 'withna': row 2 has an NA"
	[ ! -e out.tsv ] && [ ! -e out.tsv.tmp ]
	run -2 r2t --object notdf --columns s "$D/rdata/Rdata"
	assert_output "rdata2tsv: 'notdf' is not a data frame"
	run -2 r2t --object nope --columns s "$D/rdata/Rdata"
	assert_output "rdata2tsv: '$D/rdata/Rdata.rdx' has no object 'nope'"
	run -2 r2t --object InstEval --columns s,zz "$D/rdata/Rdata"
	assert_output "rdata2tsv: 'InstEval' has no column 'zz'"
	run -2 r2t --object InstEval --columns s "$D/rdata/none"
	assert_output --partial "cannot open '$D/rdata/none.rdx'"
}

@test "rdata2tsv names a damaged database" {
	cp "$D/rdata/Rdata.rdx" x.rdx
	head -c 100 "$D/rdata/Rdata.rdb" > x.rdb
	run -2 r2t --object InstEval --columns s x
	assert_output --partial "rdata2tsv: 'x.rdb': "
	# A truncated serialization inside a well-formed zlib stream.
	printf 'X\n\0\0\0\2' | gzip > y.rdx
	cp "$D/rdata/Rdata.rdb" y.rdb
	run -2 r2t --object InstEval --columns s y
	assert_output "rdata2tsv: y.rdx: the serialization ends early"
}

@test "spam2uci --libsvm: label 1 for spam groups, rows of unit length, with or without --docword" {
	run -0 s2u --min-df 1 --libsvm a.svm --docword dw --vocab v "$D/spam-corpus"
	run -0 s2u --min-df 1 --libsvm b.svm --vocab v2 "$D/spam-corpus"
	cmp a.svm b.svm
	cmp v v2
	[ ! -e b.svm.tmp ]
	# One row per document (docword's D), labels from the fixture's groups.
	[ "$(wc -l < a.svm)" -eq "$(head -n 1 dw)" ]
	[ "$(cut -d ' ' -f 1 a.svm | tr -d '\n')" = "0011" ]
	awk '{ s = 0; for (i = 2; i <= NF; i++) { split($i, a, ":"); s += a[2] * a[2] }
	       if (s < 0.999999 || s > 1.000001) exit 1 }' a.svm
	# The features are docword's word ids, in the same order.
	awk 'NR > 3 && $1 == 1 { printf "%s ", $2 }' dw > ids-dw
	head -n 1 a.svm | tr ' ' '\n' | sed -n 's/:.*//p' | tr '\n' ' ' > ids-svm
	cmp ids-dw ids-svm
	[ -x "$SCAR_ROOT/scar-train" ] || skip "scar-train is not built"
	run -0 scar-train -q --no-timing -m mlr --data a.svm -n 2 --set test_frac=0.5
}

@test "mf reads rdata2tsv's tab-separated triples" {
	[ -x "$SCAR_ROOT/scar-train" ] || skip "scar-train is not built"
	r2t --object InstEval --columns s,d,y --output r.tsv "$D/rdata/Rdata"
	run -0 scar-train -q --no-timing -m mf --data r.tsv -n 2 --shards 2 --set test_frac=0.5 --set rank=2
	[ "$(jq -r 'select(.type == "summary") | .iters' <<< "$output")" = 2 ]
}

# Fake sources for fetch-data.sh: everything local, so no registry is asked.
fake_sources() {
	mkdir -p fm ml pkg/package/data sotu/package/data
	for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz \
		t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
		cp "$D/idx-images.idx3.gz" "fm/$f"
	done
	cp -R "$D/spam-corpus/ham" "$D/spam-corpus/spam" pkg/package/data/
	for i in 1 2 3 4; do
		cp "$D/spam-corpus/spam/a.json" "pkg/package/data/spam/c$i.json"
		cp "$D/spam-corpus/ham/a.json" "sotu/package/data/180${i}_x.json"
	done
	cp "$D/spam-corpus/ham/a.json" sotu/package/data/1805_x.json
	tar -czf spam.tgz -C pkg package
	tar -czf sotu.tgz -C sotu package
	cp "$D/ml-latest.csv" ml/ratings.csv
	export SCAR_DATA="$BATS_TEST_TMPDIR/cache" SCAR_FASHION_MNIST="$BATS_TEST_TMPDIR/fm"
	export SCAR_SPAM_TARBALL="$BATS_TEST_TMPDIR/spam.tgz" SCAR_MOVIELENS="$BATS_TEST_TMPDIR/ml"
	export SCAR_SOTU_TARBALL="$BATS_TEST_TMPDIR/sotu.tgz" SCAR_LME4_DATA="$D/rdata"
}

@test "fetch-data.sh makes the second data sets, then only reports" {
	fake_sources
	run -0 sh "$FETCH"
	assert_line "data: sotu: converted into $SCAR_DATA/sotu"
	assert_line "data: insteval: converted into $SCAR_DATA/insteval"
	assert_line --regexp '^data:   spam-labels +ok +6 messages \(6 spam\) for mlr$'
	assert_line --regexp '^data:   sotu +ok +5 documents, [0-9]+ words'
	assert_line --regexp '^data:   insteval +ok +5 ratings$'
	[ "$(cat cache/insteval/ratings.tsv)" = "$(r2t --object InstEval --columns s,d,y "$D/rdata/Rdata")" ]
	head -n 1 cache/sotu/docs.sotu.txt | grep -qx '1 ham 1801_x.json'
	grep -q 'GPL (>= 2)' cache/insteval/README
	grep -q 'PDDL' cache/sotu/README
	cp cache/sotu/docword.sotu.txt first
	run -0 sh "$FETCH"
	assert_line "data: sotu: already in $SCAR_DATA/sotu"
	assert_line "data: insteval: already in $SCAR_DATA/insteval"
	cmp first cache/sotu/docword.sotu.txt
}

@test "fetch-data.sh: a broken second source fails, says which, and leaves nothing half made" {
	fake_sources
	printf 'not a tarball' > broken.tgz
	mkdir empty tmp
	export SCAR_SOTU_TARBALL="$BATS_TEST_TMPDIR/broken.tgz" SCAR_LME4_DATA="$BATS_TEST_TMPDIR/empty"
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	run -1 sh "$FETCH"
	assert_output --partial "sotu: cannot unpack '$BATS_TEST_TMPDIR/broken.tgz'"
	assert_output --partial "insteval: tools/rdata2tsv failed"
	assert_line --regexp '^data:   sotu +MISSING'
	assert_line --regexp '^data:   insteval +MISSING'
	assert_line --regexp '^data:   spam-labels +ok'
	[ ! -e cache/sotu/docword.sotu.txt ] && [ ! -e cache/insteval/ratings.tsv ]
	[ -z "$(ls tmp)" ]
}

# ---- the real data sets (skipped until `make data` has fetched them) ----

@test "real data: mlr on SpamAssassin spam/ham learns in 30 iterations" {
	need_data spam/spam.libsvm
	run -0 scar-train -q --no-timing -m mlr --data "$SCAR_DATA/spam/spam.libsvm" -n 30 --set lr=1
	printf '%s\n' "$output" > run.jsonl
	read -r o0 o1 <<< "$(first_last objective run.jsonl)"
	read -r a0 a1 <<< "$(first_last heldout run.jsonl)"
	# log 2 at the start; measured 0.198 after 30 iterations, accuracy 0.701 -> 0.965.
	awk -v a="$o0" -v b="$o1" 'BEGIN { exit !(a > 0.69 && b < 0.3) }'
	awk -v a="$a0" -v b="$a1" 'BEGIN { exit !(b > 0.93 && b > a) }'
}

@test "real data: mf on InstEval lowers the training and held-out RMSE" {
	need_data insteval/ratings.tsv
	[ "$(wc -l < "$SCAR_DATA/insteval/ratings.tsv")" -eq 73421 ]
	run -0 scar-train -q --no-timing -m mf --data "$SCAR_DATA/insteval/ratings.tsv" -n 30 \
		--set lambda=0.5
	printf '%s\n' "$output" > run.jsonl
	read -r o0 o1 <<< "$(first_last objective run.jsonl)"
	read -r h0 h1 <<< "$(first_last heldout run.jsonl)"
	# measured: objective 1.371 -> 1.208, held-out RMSE 1.328 -> 1.210
	awk -v a="$o0" -v b="$o1" 'BEGIN { exit !(b < a - 0.1) }'
	awk -v a="$h0" -v b="$h1" 'BEGIN { exit !(b < a - 0.05 && b > 0.8 && b < 1.25) }'
}

@test "real data: lda on the State of the Union addresses raises both likelihoods" {
	need_data sotu/docword.sotu.txt
	run -0 scar-train -q --no-timing -m lda --data "$SCAR_DATA/sotu/docword.sotu.txt" \
		--set vocab="$SCAR_DATA/sotu/vocab.sotu.txt" -n 30
	printf '%s\n' "$output" > run.jsonl
	read -r o0 o1 <<< "$(first_last objective run.jsonl)"
	read -r h0 h1 <<< "$(first_last heldout run.jsonl)"
	# measured: per-token log-likelihood -8.029 -> -7.819, held out -8.075 -> -7.906
	awk -v a="$o0" -v b="$o1" 'BEGIN { exit !(b > a + 0.1) }'
	awk -v a="$h0" -v b="$h1" 'BEGIN { exit !(b > a + 0.1 && b < -6) }'
}
