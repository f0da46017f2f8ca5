# scar - fault tolerance for iterative-convergent machine learning
# Plain make: `make`, `make check`, `make install PREFIX=... DESTDIR=...`.

VERSION    := 0.1.0
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d

CC       ?= cc
OPT      ?= -O2
WARN     := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wpointer-arith -Wcast-qual -Wwrite-strings \
	-Wformat=2 -Wundef -Wvla -Wno-unused-parameter
ifneq ($(CI),)
WARN     += -Werror
endif
SANITIZE ?=
ifneq ($(SANITIZE),)
SANFLAGS := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT      := -O1 -g
endif
CFLAGS   ?= $(OPT) -g
ALL_CFLAGS = -std=c11 -pthread -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(WARN) $(SANFLAGS) \
	-Iinclude -DSCAR_VERSION='"$(VERSION)"' $(CFLAGS)
LDLIBS   := -ljansson -llz4 -lz -lm -pthread
ALL_LDFLAGS = $(SANFLAGS) $(LDFLAGS)

LIB_SRC  := $(sort $(wildcard lib/*.c))
LIB_OBJ  := $(LIB_SRC:.c=.o)
CLI_SRC  := $(sort $(wildcard cmd/common/*.c))
CLI_OBJ  := $(CLI_SRC:.c=.o)
CMD_SRC  := $(sort $(wildcard cmd/scar-*.c))
PROGS    := $(patsubst cmd/%.c,%,$(CMD_SRC))
UNIT_SRC := $(sort $(wildcard tests/unit/test-*.c))
UNIT_BIN := $(UNIT_SRC:.c=)
EX_SRC   := $(sort $(wildcard examples/*.c))
EX_BIN   := $(EX_SRC:.c=)
TOOL_SRC := $(sort $(wildcard tools/*.c))
TOOL_BIN := $(TOOL_SRC:.c=)
MAN_SRC  := $(sort $(wildcard man/*.[157]))
HEADERS  := $(sort $(wildcard include/scar/*.h))
# Tools written in sh: examples/NAME.sh is built into ./NAME, beside the C
# tools (so that PATH=$PWD:$PATH finds it too), with the version filled in.
SCRIPTS  := scar-plot

.PHONY: FORCE experiment all check unit-check bats-check lint-man install uninstall clean deps bench data fuzz valgrind-check tsan-check

all: $(PROGS) $(SCRIPTS) lib/libscar.a scar.pc $(TOOL_BIN)

# sanitize.stamp holds the SANITIZE of the build. Everything compiled depends
# on it, so changing SANITIZE rebuilds all instead of mixing instrumented and
# plain objects; the tests read it (tests/bats/helper.bash). It always exists
# (an empty line for a plain build) and is rewritten only when SANITIZE
# changes, the way git's GIT-CFLAGS is: a missing stamp would make every
# object out of date on every call. It is brought up to date while the
# Makefile is read, not by a FORCE rule, so that `make -q all` after a build
# answers "up to date" and a second `make` compiles nothing.
SANITIZE_STAMP := $(shell [ -f sanitize.stamp ] && [ "$$(cat sanitize.stamp)" = '$(SANITIZE)' ] || \
	printf '%s\n' '$(SANITIZE)' > sanitize.stamp)
sanitize.stamp:
	@printf '%s\n' '$(SANITIZE)' > $@

lib/%.o: lib/%.c $(HEADERS) $(wildcard lib/*.h) sanitize.stamp
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
# The byte shuffle's plain loops are several times faster vectorised, which
# GCC's -O2 does not do to them (clang's does).
lib/ckpt_shuffle.o: private ALL_CFLAGS += -ftree-vectorize
cmd/common/%.o: cmd/common/%.c $(HEADERS) $(wildcard cmd/common/*.h) sanitize.stamp
	$(CC) $(ALL_CFLAGS) -c -o $@ $<
# Named here, the CLI objects are not intermediate: make would delete them
# after a build and rebuild them, and relink every tool, the next time.
$(CLI_OBJ):

lib/libscar.a: $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

scar-%: cmd/scar-%.c $(CLI_OBJ) lib/libscar.a $(HEADERS) $(wildcard cmd/common/*.h) sanitize.stamp
	$(CC) $(ALL_CFLAGS) -Icmd/common -o $@ $< $(CLI_OBJ) lib/libscar.a $(ALL_LDFLAGS) $(LDLIBS)

# scar-ckpt: main and the shared helpers in cmd/scar-ckpt.c, a file per subcommand in cmd/ckpt/.
CKPT_SRC := $(sort $(wildcard cmd/ckpt/*.c))
scar-ckpt: cmd/scar-ckpt.c $(CKPT_SRC) cmd/ckpt/ckpt.h $(CLI_OBJ) lib/libscar.a $(HEADERS) $(wildcard cmd/common/*.h) sanitize.stamp
	$(CC) $(ALL_CFLAGS) -Icmd/common -Icmd/ckpt -o $@ cmd/scar-ckpt.c $(CKPT_SRC) $(CLI_OBJ) lib/libscar.a $(ALL_LDFLAGS) $(LDLIBS)

tests/unit/test-%: tests/unit/test-%.c tests/unit/unit.h lib/libscar.a $(HEADERS) sanitize.stamp
	$(CC) $(ALL_CFLAGS) -Ilib -o $@ $< lib/libscar.a $(ALL_LDFLAGS) $(LDLIBS)

examples/%: examples/%.c lib/libscar.a $(HEADERS) sanitize.stamp
	$(CC) $(ALL_CFLAGS) -o $@ $< lib/libscar.a $(ALL_LDFLAGS) $(LDLIBS)

tools/%: tools/%.c lib/libscar.a $(HEADERS) sanitize.stamp
	$(CC) $(ALL_CFLAGS) -o $@ $< lib/libscar.a $(ALL_LDFLAGS) $(LDLIBS)

$(SCRIPTS): %: examples/%.sh Makefile
	sed 's/^version=.*/version=$(VERSION)/' $< > $@.tmp && chmod 755 $@.tmp && mv -f $@.tmp $@

tests/fault-shim.so: tests/fault-shim.c
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -shared -fPIC -o $@ $< -ldl

# scar.pc for the paths of this invocation; `make install` writes it afresh,
# so installing with another PREFIX than the build's gets the right one.
# The library is static only, so its own link needs (-lm) are in Libs, and
# so is the sanitizer runtime of a SANITIZE build (its objects call it).
PC_SANLIBS := $(if $(SANITIZE), -fsanitize=$(SANITIZE))
SCAR_PC = printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
	  'Name: scar' 'Description: fault tolerance for iterative-convergent machine learning' \
	  'Version: $(VERSION)' 'Requires: jansson liblz4 zlib' \
	  'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lscar -lm -pthread$(PC_SANLIBS)'

scar.pc: Makefile sanitize.stamp
	$(SCAR_PC) > $@

# `make check` installs what it needs first, so a fresh machine needs only this.
check: deps
	$(MAKE) all $(UNIT_BIN) $(EX_BIN) tests/fault-shim.so
	$(MAKE) check-includes unit-check lint-man bats-check

# No cycles among the library's files (lib/X.c calls lib/Y.c), but for the
# known ones in tools/check-includes.allow.
.PHONY: check-includes
check-includes:
	@sh tools/check-includes.sh -a tools/check-includes.allow

unit-check: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "unit: $$t"; $(TEST_WRAPPER) ./$$t; done

lint-man:
	@set -e; for m in $(MAN_SRC); do mandoc -Tlint -W warning $$m; done; echo "man: $(words $(MAN_SRC)) pages lint clean"

bats-check: all tests/fault-shim.so
	bats $(BATS_FLAGS) tests/bats

# valgrind-check: the CLI tests with every run of a scar tool under
# memcheck, however the test calls it (tests/bats/helper.bash puts a wrapper
# per tool first on PATH), one log per run in VALGRIND_OUT, summed up by
# tests/valgrind-report.sh. An error, or a leak definitely, indirectly or
# possibly lost, exits 99 (never a tool's 0, 1 or 2) and fails the test and
# the report. Possibly lost counts: no tool keeps its only pointer to a
# block in the block's middle, so one would be a real leak. Still
# reachable does not count: a CLI may exit (die, usage) holding memory. The
# ranks of Open MPI jobs run under VALGRIND_MPI, which suppresses what Open
# MPI, PMIx and libevent leak themselves (tests/valgrind-openmpi.supp). Left out:
# fuzz-smoke.bats (it runs no scar tool; its ASan+libFuzzer binaries cannot
# run under valgrind), crash.bats' SIGKILL test (it skips itself: the kill
# moments would fall in valgrind's start-up, and a killed valgrind checks
# nothing) and the installed copies install.bats runs by their installed
# path. About 33 minutes on two cores.
VALGRIND_OUT ?= $(CURDIR)/valgrind.out
VALGRIND ?= valgrind --error-exitcode=99 --leak-check=full \
	--errors-for-leak-kinds=definite,indirect,possible --show-leak-kinds=definite,indirect,possible \
	--log-file=$(VALGRIND_OUT)/%q{SCAR_WRAP_ID}.log
VALGRIND_MPI ?= $(VALGRIND) --num-callers=40 --suppressions=$(CURDIR)/tests/valgrind-openmpi.supp
VALGRIND_BATS := $(filter-out %/fuzz-smoke.bats,$(sort $(wildcard tests/bats/*.bats)))

valgrind-check: all tests/fault-shim.so
	rm -rf $(VALGRIND_OUT)
	mkdir -p $(VALGRIND_OUT)
	SCAR_TEST_WRAPPER='$(VALGRIND)' SCAR_TEST_WRAPPER_MPI='$(VALGRIND_MPI)' bats $(BATS_FLAGS) $(VALGRIND_BATS); st=$$?; \
	  sh tests/valgrind-report.sh $(VALGRIND_OUT) && exit $$st

# tsan-check: the suites that run threads (scar-train --async, --threads of
# the writers and of verify and info, the survivor thread of an MPI rank
# that outlives another's death), built with ThreadSanitizer, which
# stops at the first report (halt_on_error). Call it as is: it builds with
# SANITIZE=thread itself (rebuilding everything).
TSAN_BATS := tests/bats/async.bats tests/bats/threads.bats
tsan-check:
	$(MAKE) SANITIZE=thread all tests/fault-shim.so
	TSAN_OPTIONS=halt_on_error=1 bats $(BATS_FLAGS) $(TSAN_BATS)
	TSAN_OPTIONS=halt_on_error=1 bats $(BATS_FLAGS) -f 'async' tests/bats/faults.bats tests/bats/crash.bats
	TSAN_OPTIONS=halt_on_error=1 bats $(BATS_FLAGS) -f 'mf, rank 1 of 2|mpirun killed|as the simulated one' \
		tests/bats/mpi-kill.bats

deps:
	@sh tools/deps.sh

data: all
	@sh tools/fetch-data.sh

# The main job: the paper's comparison on real data (README, first command).
experiment: deps
	$(MAKE) all
	@sh tools/fetch-data.sh
	@sh examples/compare-strategies.sh

bench: all
	@sh bench/run.sh

fuzz:
	@sh tests/fuzz/run.sh

# Directories install may have to create below the conventional bin/, lib/,
# include/ and share/man/ of PREFIX: uninstall removes them again when they
# are empty (children first), and never the conventional ones.
SCAR_RMDIRS = $(INCLUDEDIR)/scar $(DATADIR)/scar $(PKGCONFIGDIR) $(MANDIR)/man1 $(MANDIR)/man5 \
	$(MANDIR)/man7 $(BASHCOMPDIR) $(DATADIR)/bash-completion $(ZSHCOMPDIR) \
	$(DATADIR)/zsh $(FISHCOMPDIR) $(DATADIR)/fish

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/scar \
	  $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
	  $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR) \
	  $(DESTDIR)$(DATADIR)/scar
	install -m 755 $(PROGS) $(SCRIPTS) $(DESTDIR)$(BINDIR)
	install -m 644 man/scar-events.schema.json $(DESTDIR)$(DATADIR)/scar
	install -m 644 lib/libscar.a $(DESTDIR)$(LIBDIR)
	install -m 644 $(HEADERS) $(DESTDIR)$(INCLUDEDIR)/scar
	$(SCAR_PC) > $(DESTDIR)$(PKGCONFIGDIR)/scar.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/scar.pc
	for m in $(MAN_SRC); do s=$${m##*.}; install -m 644 $$m $(DESTDIR)$(MANDIR)/man$$s || exit 1; done
	for f in completions/bash/*; do [ ! -f "$$f" ] || install -m 644 $$f $(DESTDIR)$(BASHCOMPDIR) || exit 1; done
	for f in completions/zsh/*; do [ ! -f "$$f" ] || install -m 644 $$f $(DESTDIR)$(ZSHCOMPDIR) || exit 1; done
	for f in completions/fish/*; do [ ! -f "$$f" ] || install -m 644 $$f $(DESTDIR)$(FISHCOMPDIR) || exit 1; done

uninstall:
	for p in $(PROGS) $(SCRIPTS); do rm -f $(DESTDIR)$(BINDIR)/$$p; done
	rm -f $(DESTDIR)$(LIBDIR)/libscar.a $(DESTDIR)$(PKGCONFIGDIR)/scar.pc
	rm -f $(DESTDIR)$(DATADIR)/scar/scar-events.schema.json
	for h in $(HEADERS); do rm -f $(DESTDIR)$(INCLUDEDIR)/scar/$${h##*/}; done
	for m in $(MAN_SRC); do s=$${m##*.}; rm -f $(DESTDIR)$(MANDIR)/man$$s/$${m##*/}; done
	for f in completions/bash/*; do rm -f $(DESTDIR)$(BASHCOMPDIR)/$${f##*/}; done
	for f in completions/zsh/*; do rm -f $(DESTDIR)$(ZSHCOMPDIR)/$${f##*/}; done
	for f in completions/fish/*; do rm -f $(DESTDIR)$(FISHCOMPDIR)/$${f##*/}; done
	for d in $(SCAR_RMDIRS); do [ ! -d $(DESTDIR)$$d ] || rmdir $(DESTDIR)$$d 2>/dev/null || true; done

clean:
	rm -f lib/*.o cmd/common/*.o lib/libscar.a scar.pc $(PROGS) $(SCRIPTS) $(UNIT_BIN) $(EX_BIN) $(TOOL_BIN) tests/fault-shim.so
	rm -f sanitize.stamp
	rm -rf tests/fuzz/bin valgrind.out

# --- MPI ---
# When mpicc is on the PATH, scar-train is the MPI variant (scar-mpi(7)):
# lib/dist_mpi.c is compiled with -DSCAR_MPI and scar-train is compiled and
# linked by mpicc. A run without mpirun behaves exactly as the plain build
# (MPI is not even initialised). `make MPI=0` builds without MPI.
MPI ?= $(if $(shell command -v mpicc 2>/dev/null),1,0)
ifeq ($(MPI),1)
MPICC ?= mpicc
lib/dist_mpi.o: private CC = $(MPICC)
lib/dist_mpi.o: private ALL_CFLAGS += -DSCAR_MPI
scar-train: private CC = $(MPICC)
scar-train: private ALL_CFLAGS += -DSCAR_MPI
endif
lib/dist_mpi.o: Makefile
# --- end MPI ---
