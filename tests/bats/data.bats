#!/usr/bin/env bats
# data.bats - tools/spam2uci (the corpus converter) and tools/fetch-data.sh
# (`make data`) on tiny fixtures; nothing here touches the network.

bats_require_minimum_version 1.5.0
load helper

S2U="$SCAR_ROOT/tools/spam2uci"
FETCH="$SCAR_ROOT/tools/fetch-data.sh"
D="$FIXTURES/data"

s2u() {
	${SCAR_WRAP:-} "$S2U" "$@"
}

@test "spam2uci --help prints the usage on stdout and every long option" {
	run -0 s2u --help
	assert_line --index 0 --partial "usage: spam2uci [--docs file] [--docword file] [--libsvm file]"
	for o in $(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", .*/\1/p' "$SCAR_ROOT/tools/spam2uci.c"); do
		assert_output --partial -- "--$o"
		grep -q -- "--$o" "$SCAR_ROOT/tools/spam2uci.md"
	done
}

@test "spam2uci.md lists exactly the embedded stop words" {
	sed -n '/^static const char \*const stop_words/,/^};/p' "$SCAR_ROOT/tools/spam2uci.c" |
		grep -o '"[a-z]*"' | tr -d '"' > from-source
	sed -n '/^## Stop words/,/^## /p' "$SCAR_ROOT/tools/spam2uci.md" | grep -v -e '^#' -e '^<!--' |
		tr ',' '\n' | tr -d ' ' | grep . > from-doc
	[ "$(wc -l < from-source)" -gt 100 ]
	diff from-source from-doc
}

@test "spam2uci misuse is a usage error" {
	run -2 s2u --no-such-option
	assert_output --partial "try 'spam2uci --help'"
	run -2 s2u --vocab v "$D/spam-corpus"
	assert_output --partial "--vocab and one of --docword and --libsvm are required"
	run -2 s2u --docword d --vocab v
	assert_output --partial "no input"
	run -2 s2u --min-df 0 --docword d --vocab v "$D/spam-corpus"
	assert_output --partial "option '--min-df' needs a whole number"
	run -2 s2u --max-vocab 12x --docword d --vocab v "$D/spam-corpus"
	assert_output --partial "'--max-vocab'"
	[ ! -e d ] && [ ! -e v ]
}

@test "spam2uci converts the fixture corpus exactly" {
	cd "$D"
	run -0 s2u --min-df 2 --docs "$BATS_TEST_TMPDIR/docs" \
		--docword "$BATS_TEST_TMPDIR/docword" --vocab "$BATS_TEST_TMPDIR/vocab" spam-corpus
	assert_output ""
	cmp "$BATS_TEST_TMPDIR/docword" spam-expect-docword.txt
	cmp "$BATS_TEST_TMPDIR/vocab" spam-expect-vocab.txt
	cmp "$BATS_TEST_TMPDIR/docs" spam-expect-docs.txt
	[ ! -e "$BATS_TEST_TMPDIR/docword.tmp" ]
}

@test "spam2uci output does not depend on the order of its operands" {
	cd "$D"
	run -0 s2u --min-df 2 --docword "$BATS_TEST_TMPDIR/dw1" --vocab "$BATS_TEST_TMPDIR/v1" \
		spam-corpus/spam spam-corpus/ham
	cd "$BATS_TEST_TMPDIR"
	run -0 s2u --min-df 2 --docword dw2 --vocab v2 \
		"$D/spam-corpus/ham/b.json" "$D/spam-corpus/spam" "$D/spam-corpus/ham/a.json"
	cmp dw1 "$D/spam-expect-docword.txt"
	cmp dw2 "$D/spam-expect-docword.txt"
	cmp v2 "$D/spam-expect-vocab.txt"
}

@test "spam2uci: stop words, short tokens, headers, markup and base64 are dropped" {
	run -0 s2u --min-df 1 --docword dw --vocab v "$D/spam-corpus"
	run -1 grep -x -e the -e about -e for -e now -e here -e zz -e received -e mailer \
		-e junk -e example -e alice -e nbsp -e html -e body -e qujdrevgr v
	grep -qx meeting v	# from a Subject header
	grep -qx offer v
	grep -qx attached v	# the text between tags stays
}

@test "spam2uci --max-vocab keeps the most frequent words, ties broken by the word" {
	run -0 s2u --min-df 2 --max-vocab 3 --docword dw --vocab v "$D/spam-corpus"
	# money 6, budget 4, free 4, then click = monday = numbers = 2
	run -0 cat v
	assert_output "$(printf 'budget\nfree\nmoney')"
	run -0 s2u --min-df 2 --max-vocab 4 --docword dw --vocab v "$D/spam-corpus"
	run -0 cat v
	assert_output "$(printf 'budget\nclick\nfree\nmoney')"
	run -0 head -n 3 dw
	assert_output "$(printf '4\n4\n8')"
}

@test "spam2uci --min-length" {
	run -0 s2u --min-df 1 --min-length 6 --docword dw --vocab v "$D/spam-corpus"
	run -0 cat v
	assert_output "$(printf 'attached\nbudget\nmeeting\nmonday\nnumbers')"
}

@test "spam2uci refuses an empty vocabulary (default --min-df 5 on 4 messages)" {
	run -2 s2u --docword dw --vocab v "$D/spam-corpus"
	assert_output --partial "empty vocabulary"
	[ ! -e dw ] && [ ! -e v ]
}

@test "spam2uci names bad messages and writes nothing" {
	run -2 s2u --min-df 1 --docword dw --vocab v "$D/spam-corpus" "$D/spam-bad"
	assert_line --partial "cannot parse '$D/spam-bad/broken.json': line"
	assert_line "spam2uci: '$D/spam-bad/notext.json': expected an object with a string \"text\""
	assert_line "spam2uci: not writing a corpus: some inputs could not be read"
	run -2 s2u --min-df 1 --docword dw --vocab v "$D/spam-corpus/nope"
	assert_output --partial "cannot open '$D/spam-corpus/nope': No such file or directory"
	[ ! -e dw ] && [ ! -e v ]
}

# A fake cache source: 4 IDX names, a tarball shaped like the npm package, MovieLens.
fake_sources() {
	mkdir -p fm ml pkg/package/data
	for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz \
		t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
		cp "$D/idx-images.idx3.gz" "fm/$f"
	done
	cp -R "$D/spam-corpus/ham" "$D/spam-corpus/spam" pkg/package/data/
	# make every word frequent enough for the default --min-df 5
	for i in 1 2 3 4; do
		cp "$D/spam-corpus/spam/a.json" "pkg/package/data/spam/c$i.json"
	done
	tar -czf spam.tgz -C pkg package
	cp "$D/ml-latest.csv" ml/ratings.csv
	# The State of the Union package has its *.json files directly in data/.
	mkdir -p sotu/package/data
	for i in 1 2 3 4 5; do
		cp "$D/spam-corpus/spam/a.json" "sotu/package/data/199$i.json"
	done
	tar -czf sotu.tgz -C sotu package
	export SCAR_SOTU_TARBALL="$BATS_TEST_TMPDIR/sotu.tgz" SCAR_LME4_DATA="$D/rdata"
}

@test "fetch-data.sh fills the cache, then only reports" {
	fake_sources
	export SCAR_DATA="$BATS_TEST_TMPDIR/cache" SCAR_FASHION_MNIST="$BATS_TEST_TMPDIR/fm"
	export SCAR_SPAM_TARBALL="$BATS_TEST_TMPDIR/spam.tgz" SCAR_MOVIELENS="$BATS_TEST_TMPDIR/ml"
	run -0 sh "$FETCH"
	assert_line "data: fashion-mnist: linked $SCAR_DATA/fashion-mnist -> $SCAR_FASHION_MNIST"
	assert_line "data: spam: converted into $SCAR_DATA/spam"
	assert_line --partial "data: movielens: linked $SCAR_DATA/movielens -> $SCAR_MOVIELENS"
	assert_line --regexp '^data:   spam +ok +6 documents, [0-9]+ words'
	assert_line --regexp '^data:   movielens +ok +4 ratings$'
	[ -L cache/fashion-mnist/t10k-labels-idx1-ubyte.gz ]
	[ -L cache/movielens/ratings.csv ]
	head -n 1 cache/spam/docs.spam.txt | grep -qx '1 spam spam/a.json'
	cp cache/spam/docword.spam.txt first
	run -0 sh "$FETCH"
	assert_line "data: fashion-mnist: already in $SCAR_DATA/fashion-mnist"
	assert_line "data: spam: already in $SCAR_DATA/spam"
	assert_line "data: movielens: already in $SCAR_DATA/movielens"
	refute_output --partial "linked"
	cmp first cache/spam/docword.spam.txt
}

@test "fetch-data.sh: MovieLens missing is not an error and says where to get it" {
	fake_sources
	export SCAR_DATA="$BATS_TEST_TMPDIR/cache" SCAR_FASHION_MNIST="$BATS_TEST_TMPDIR/fm"
	export SCAR_SPAM_TARBALL="$BATS_TEST_TMPDIR/spam.tgz" SCAR_MOVIELENS="$BATS_TEST_TMPDIR/none"
	run -0 sh "$FETCH"
	assert_output --partial "https://files.grouplens.org/datasets/movielens/ml-latest-small.zip"
	assert_output --partial "no commercial use"
	assert_line --regexp '^data:   movielens +absent'
	[ ! -e cache/movielens/ratings.csv ]
}

@test "fetch-data.sh fails, and leaves no half corpus, when a source is broken" {
	fake_sources
	printf 'not a tarball' > broken.tgz
	export SCAR_DATA="$BATS_TEST_TMPDIR/cache" SCAR_FASHION_MNIST="$BATS_TEST_TMPDIR/empty"
	export SCAR_SPAM_TARBALL="$BATS_TEST_TMPDIR/broken.tgz" SCAR_MOVIELENS="$BATS_TEST_TMPDIR/ml"
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	mkdir empty tmp
	run -1 sh "$FETCH"
	assert_output --partial "fashion-mnist: the IDX files are not in '$BATS_TEST_TMPDIR/empty'"
	assert_output --partial "spam: cannot unpack"
	assert_line --regexp '^data:   fashion-mnist +MISSING'
	assert_line --regexp '^data:   spam +MISSING'
	[ ! -e cache/spam/docword.spam.txt ]
	[ -z "$(ls tmp)" ]	# the unpack directory is removed
}

# The readers' errors as a user sees them: file:line for text, the offset for binary.
@test "bad data files make scar-train say where, and exit 2" {
	[ -x "$SCAR_ROOT/scar-train" ] || skip "scar-train is not built"
	run -2 scar-train -q -m mf --data "$D/ml-bad-line.csv" -n 1
	assert_output "scar-train: $D/ml-bad-line.csv:4: expected an item id, got 'x3'"
	run -2 scar-train -q -m lda --data "$D/uci-docword-range.txt" -n 1
	assert_output "scar-train: $D/uci-docword-range.txt:5: word id 5 not in 1..4"
	run -2 scar-train -q -m ridge --data "$D/svm-bad-token.txt" -n 1
	assert_output "scar-train: $D/svm-bad-token.txt:3: expected 'idx:value', got '3:abc'"
	mkdir idx
	cp "$D/idx-truncated.idx3" idx/train-images-idx3-ubyte
	cp "$D/idx-labels.idx1" idx/train-labels-idx1-ubyte
	cp "$D/idx-images.idx3" idx/t10k-images-idx3-ubyte
	cp "$D/idx-labels.idx1" idx/t10k-labels-idx1-ubyte
	run -2 scar-train -q -m mlr --data idx -n 1
	assert_output --partial "'idx/train-images-idx3-ubyte': offset 25: file ends early"
}
