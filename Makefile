# ringlab — the front door. `make help` lists what you can do.
#
# Everything is built under build/ (ignored by git). Parts that need what this machine
# lacks are skipped with a ✗ line in the banner, never a failed build.

SHELL := /bin/bash
.DEFAULT_GOAL := all
CC ?= cc
BUILD ?= build
OPT ?= -O2
SAN ?=
# (no tail calls: a function's return address is its caller's, which the graders' watch on calls into
# the runtime reads — common/apiwatch.h)
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -g $(OPT) $(SAN) -Wall -Wextra -Werror -pthread -fno-optimize-sibling-calls \
  -ffunction-sections -Icommon -Itui

# ---------------------------------------------------------------- what this machine has
pc = $(shell pkg-config --exists $(1) 2>/dev/null && echo 1)
# jansson: through pkg-config, or its header where pkg-config is missing (a bare GPU image)
HAVE_JANSSON  := $(or $(call pc,jansson),$(if $(wildcard /usr/include/jansson.h),1,))
HAVE_YAJL     := $(or $(call pc,yajl),$(if $(wildcard /usr/include/yajl/yajl_parse.h),1,))
HAVE_CHECK    := $(call pc,check)
HAVE_SECCOMP  := $(call pc,libseccomp)
HAVE_NCURSES  := $(call pc,ncursesw)
HAVE_OPENBLAS := $(call pc,openblas)
HAVE_NVCC     := $(shell command -v nvcc >/dev/null 2>&1 && echo 1)
NCCL_INC      := $(firstword $(wildcard /usr/local/cuda/include/nccl.h /usr/local/include/nccl.h /usr/include/nccl.h))
HAVE_NCCL     := $(if $(NCCL_INC),1,)
HAVE_MPI      := $(shell command -v mpicc >/dev/null 2>&1 && echo 1)
HAVE_TMUX     := $(shell command -v tmux >/dev/null 2>&1 && echo 1)

CFLAGS := $(CFLAGS_COMMON)
LDLIBS := -lm -pthread
ifeq ($(HAVE_JANSSON),1)
  LDLIBS += $(or $(shell pkg-config --libs jansson 2>/dev/null),-ljansson)
endif
ifeq ($(HAVE_YAJL),1)
  LDLIBS += -lyajl
endif
ifeq ($(HAVE_OPENBLAS),1)
  CFLAGS += -DRL_HAVE_OPENBLAS $(shell pkg-config --cflags-only-I openblas)
  LDLIBS += $(shell pkg-config --libs openblas)
endif
ifeq ($(HAVE_NCURSES),1)
  CFLAGS += -DRL_HAVE_NCURSES
  NCURSES_LIBS := $(shell pkg-config --libs ncursesw)
endif
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
GRADE_LIBS := $(CHECK_LIBS) $(shell pkg-config --libs libseccomp 2>/dev/null)
GRADING    := $(and $(HAVE_CHECK),$(HAVE_SECCOMP))

# ---------------------------------------------------------------- sources
LIB_SRC   := $(wildcard common/*.c)
CLI_SRC   := $(wildcard common/cli/*.c)
TUI_SRC   := $(wildcard tui/*.c)
TEST_SRC  := $(wildcard common/tests/*.c tui/tests/*.c grader/tests/*.c fuzz/tests/*.c)
obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

LIB      := $(BUILD)/libringlab.a
TUI_LIB  := $(BUILD)/libringlab_tui.a
RINGLAB  := $(BUILD)/ringlab
TESTBIN  := $(BUILD)/tests/run_tests
SUITES_H := $(BUILD)/tests/suites.gen.h

.PHONY: all banner deps test test-unit test-asan help clean
# no file a rule makes is deleted as intermediate (the variants' objects are kept for the next make)
.SECONDARY:
all: banner $(RINGLAB) $(if $(HAVE_CHECK),$(TESTBIN),)

ok = $(if $(1),✓,✗)
banner:
	@echo "ringlab build — what this machine has:"
	@echo "  $(call ok,$(HAVE_JANSSON)) JSON library (jansson)   $(if $(HAVE_JANSSON),traces written,required: run 'make deps')"
	@echo "  $(call ok,$(HAVE_YAJL)) JSON parser (yajl)         $(if $(HAVE_YAJL),traces read as they stream,required: run 'make deps')"
	@echo "  $(call ok,$(HAVE_CHECK)) Check                      $(if $(HAVE_CHECK),make test and graders,no tests or grading: run 'make deps')"
	@echo "  $(call ok,$(HAVE_SECCOMP)) libseccomp                 $(if $(HAVE_SECCOMP),graders sandbox the code under test,no grading: run 'make deps')"
	@echo "  $(call ok,$(HAVE_OPENBLAS)) OpenBLAS                   $(if $(HAVE_OPENBLAS),fp32 GEMM,plain C GEMM loop (slower))"
	@echo "  $(call ok,$(HAVE_NCURSES)) ncurses                    $(if $(HAVE_NCURSES),live TUI,headless renders only)"
	@echo "  $(call ok,$(HAVE_NVCC)) CUDA (nvcc)                $(if $(HAVE_NVCC),GPU backend built ($(CUDA_HOME); $(CUDA_ARCH_NAME)); --backend cuda needs a GPU at run time,$(if $(filter 0,$(CUDA)),off (CUDA=0): CPU only,not found: CPU only (sim backend)))"
	@echo "  $(call ok,$(HAVE_NCCL)) NCCL                       $(if $(HAVE_NCCL),$(NCCL_INC): one GPU per rank through NCCL,$(if $(filter 0,$(NCCL)),off (NCCL=0),not found)$(if $(HAVE_NVCC),: ranks use the device-memory transport,))"
	@echo "  $(call ok,$(HAVE_MPI)) MPI (mpicc)                $(if $(HAVE_MPI),unique id by MPI_Bcast under mpirun,$(if $(filter 0,$(MPI)),off (MPI=0),not found): multi-process launch through RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)"
ifneq ($(HAVE_JANSSON),1)
	@echo "ringlab needs the jansson JSON library: run 'make deps' (as root) or: apt-get install -y libjansson-dev" >&2
	@exit 1
endif
ifneq ($(HAVE_YAJL),1)
	@echo "ringlab needs the yajl JSON parser: run 'make deps' (as root) or: apt-get install -y libyajl-dev" >&2
	@exit 1
endif

DEPS_PKGS := build-essential clang pkg-config check libjansson-dev libyajl-dev libopenblas-dev libncurses-dev libseccomp-dev tmux \
  zip unzip
deps:
	@if [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEPS_PKGS); \
	else \
	  echo "Run as root, or: sudo apt-get install -y $(DEPS_PKGS)"; \
	fi

# ---------------------------------------------------------------- compile rules
# Objects are rebuilt when the flags change (CUDA=0, SAN=..., OPT=...), not only the sources.
FLAGS_STAMP := $(BUILD)/flags.stamp
$(FLAGS_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(STAMP_FLAGS)' | cmp -s - $@ 2>/dev/null || echo '$(STAMP_FLAGS)' > $@
.PHONY: FORCE
FORCE:

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"
	@$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/tui/term.o: CFLAGS += $(if $(HAVE_NCURSES),$(shell pkg-config --cflags ncursesw),)

$(LIB): $(call obj,$(LIB_SRC))
	@mkdir -p $(dir $@)
	@echo "  AR    $@"
	@rm -f $@ && ar rcs $@ $^

# the TUI as a library: build/ringlab and every lab binary link it (live view, charts)
$(TUI_LIB): $(call obj,$(TUI_SRC))
	@echo "  AR    $@"
	@rm -f $@ && ar rcs $@ $^

$(RINGLAB): $(call obj,$(CLI_SRC)) $(TUI_LIB) $(LIB)
	@echo "  LINK  $@"
	@$(CC) $(CFLAGS) $(call obj,$(CLI_SRC)) $(TUI_LIB) $(LIB) $(LDLIBS) $(NCURSES_LIBS) -o $@

$(SUITES_H): $(TEST_SRC)
	@mkdir -p $(dir $@)
	@grep -ho '^Suite \*[a-z0-9_]*_suite(void)' $(TEST_SRC) | sed 's/^Suite \*\(.*\)(void)/RL_SUITE(\1)/' | sort > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(BUILD)/obj/common/tests/run_tests.o: $(SUITES_H)
$(BUILD)/obj/common/tests/run_tests.o: CFLAGS += -I$(BUILD)/tests

# ---------------------------------------------------------------- fuzz targets (issue 17)
# fuzz/NAME.c is one target (LLVMFuzzerTestOneInput). Every build links each with fuzz/replay.c
# into $(BUILD)/fuzz/NAME-replay, which make test runs on the regression corpus fuzz/regress/NAME/
# and on the seeds (fuzz/seeds.sh); a clang build also links each with libFuzzer into
# $(BUILD)/fuzz/NAME-fuzz: make test's sanitizer build (clang) runs each for a short smoke, and
# make fuzz for FUZZ_SECONDS each.
FUZZ_TARGETS := trace flight answers options
IS_CLANG     := $(if $(findstring clang,$(shell $(CC) --version 2>/dev/null | head -1)),1,)
FUZZ_REPLAY  := $(if $(HAVE_CHECK),$(foreach t,$(FUZZ_TARGETS),$(BUILD)/fuzz/$(t)-replay),)
FUZZ_BINS    := $(if $(and $(HAVE_CHECK),$(IS_CLANG)),$(foreach t,$(FUZZ_TARGETS),$(BUILD)/fuzz/$(t)-fuzz),)
FUZZ_COMMON  := $(call obj,fuzz/fuzz.c grader/answers.c) $(TUI_LIB) $(LIB)
all: $(FUZZ_REPLAY) # (here: a prerequisite is expanded where its rule is read)
$(BUILD)/obj/fuzz/%.o: CFLAGS += -Igrader
$(BUILD)/fuzz/%-replay: $(BUILD)/obj/fuzz/%.o $(call obj,fuzz/replay.c) $(FUZZ_COMMON)
	@mkdir -p $(dir $@)
	@echo "  LINK  $@"
	@$(CC) $(CFLAGS) $^ $(LDLIBS) $(NCURSES_LIBS) -o $@
$(BUILD)/fuzz/%-fuzz: $(BUILD)/obj/fuzz/%.o $(FUZZ_COMMON)
	@mkdir -p $(dir $@)
	@echo "  LINK  $@"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer $^ $(LDLIBS) $(NCURSES_LIBS) -o $@

.PHONY: fuzz-bins fuzz
fuzz-bins: $(FUZZ_BINS) $(FUZZ_REPLAY)

# make fuzz [FUZZ=trace] [FUZZ_SECONDS=600]: each target in a clang build of its own, from the
# seeds and the regression corpus; a crash stops it with the input in fuzz/regress/NAME/
# (commit it: make test replays it from then on).
FUZZ_SECONDS ?= 60
FUZZ ?= $(FUZZ_TARGETS)
FUZZ_SAN := -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer -fno-sanitize-recover=undefined
fuzz:
	@command -v clang >/dev/null || { echo "make fuzz needs clang and libFuzzer: run 'make deps' (as root)" >&2; exit 1; }
	$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang OPT=-O1 CUDA=0 MPI=0 SAN="$(FUZZ_SAN)" \
	  build/fuzz/ringlab $(foreach t,$(FUZZ),build/fuzz/fuzz/$(t)-fuzz)
	rm -rf build/fuzz/seeds && fuzz/seeds.sh build/fuzz/ringlab build/fuzz/seeds
	@for t in $(FUZZ); do \
	  echo "== fuzz $$t for $(FUZZ_SECONDS) s (corpus build/fuzz/corpus/$$t) =="; \
	  mkdir -p build/fuzz/corpus/$$t fuzz/regress/$$t; \
	  build/fuzz/fuzz/$$t-fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=20 -rss_limit_mb=4096 \
	    -artifact_prefix=fuzz/regress/$$t/ -print_final_stats=1 \
	    build/fuzz/corpus/$$t build/fuzz/seeds/$$t fuzz/regress/$$t || exit 1; \
	done

$(TESTBIN): $(call obj,$(TEST_SRC)) $(call obj,$(filter-out common/cli/main.c,$(CLI_SRC)) $(TUI_SRC) grader/sandbox.c) $(LIB)
	@echo "  LINK  $@"
	@$(CC) $(CFLAGS) $^ $(LDLIBS) $(NCURSES_LIBS) $(GRADE_LIBS) -o $@

# ================================================================ CUDA / NCCL / MPI (GPU backend, issue 6)
# Owned by the GPU backend; other rules stay above and below. Every part is optional:
#   make CUDA=0   CPU only (no nvcc needed)      make NCCL=0   GPU build without NCCL
#   make MPI=0    no MPI (env launcher only)     CUDA_HOME=..., NCCL_HOME=... other installs
# C files never include CUDA headers: they call the plain-C API of common/cuda_backend.h,
# implemented in common/*.cu (compiled by nvcc). RL_HAVE_CUDA / RL_HAVE_NCCL / RL_HAVE_MPI
# tell the C side what was built.
ifeq ($(CUDA),0)
  HAVE_NVCC :=
endif
# CUDA_FAKE=1 (tests only): cuda_backend.h emulated on the host by common/cuda_fake/ (fake_cuda.c,
# and NCCL by fake_nccl.c), no nvcc: --backend cuda runs device tensors, the device-memory
# transport and the NCCL paths (RL_FAKE_GPUS=N: one rank per "GPU" in one process; one process
# per rank under a launcher) on the CPU, so code that reads device memory through host
# pointers fails in CI (make test).
ifeq ($(CUDA_FAKE),1)
  HAVE_NVCC :=
  NCCL      := 0
  CFLAGS    += -DRL_HAVE_CUDA -DRL_FAKE_CUDA -DRL_HAVE_NCCL
  $(LIB): $(BUILD)/obj/common/cuda_fake/fake_cuda.o $(BUILD)/obj/common/cuda_fake/fake_nccl.o
endif
ifeq ($(MPI),0)
  HAVE_MPI :=
endif
ifneq ($(NCCL_HOME),)
  NCCL_INC  := $(wildcard $(NCCL_HOME)/include/nccl.h)
  HAVE_NCCL := $(if $(NCCL_INC),1,)
endif
ifneq ($(HAVE_NVCC),1)
  HAVE_NCCL :=
endif
ifeq ($(NCCL),0)
  HAVE_NCCL :=
endif
NVCC           ?= nvcc
CUDA_HOME      ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
CUDA_ARCH      ?= -gencode arch=compute_90,code=[sm_90,compute_90]
CUDA_ARCH_NAME ?= sm_90 + PTX
CU_SRC         := $(wildcard common/*.cu)
cuobj = $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(1))
ifeq ($(HAVE_NVCC),1)
  CFLAGS      += -DRL_HAVE_CUDA
  NVFLAGS     := -std=c++17 -g -O2 $(CUDA_ARCH) -Icommon -DRL_HAVE_CUDA -Werror all-warnings \
                 -Xcompiler -Wall,-Wextra,-Werror,-fPIC
  CUDA_LIBDIR := $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart.so $(CUDA_HOME)/lib/libcudart.so))
  CUDA_LIBDIR := $(patsubst %/,%,$(dir $(CUDA_LIBDIR)))
  LDLIBS      += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcudart -lstdc++ -ldl
  ifeq ($(HAVE_NCCL),1)
    NCCL_LIBDIR := $(firstword $(wildcard $(dir $(NCCL_INC))../lib/libnccl.so* $(dir $(NCCL_INC))../lib64/libnccl.so*))
    NCCL_LIBDIR := $(abspath $(dir $(NCCL_LIBDIR)))
    NCCL_SONAME := $(if $(wildcard $(NCCL_LIBDIR)/libnccl.so),-lnccl,-l:libnccl.so.2)
    CFLAGS  += -DRL_HAVE_NCCL
    NVFLAGS += -DRL_HAVE_NCCL -I$(dir $(NCCL_INC))
    LDLIBS  += -L$(NCCL_LIBDIR) -Wl,-rpath,$(NCCL_LIBDIR) $(NCCL_SONAME)
  endif
  $(LIB): $(call cuobj,$(CU_SRC))
  all: $(BUILD)/gpu_check
endif
ifeq ($(HAVE_MPI),1)
  MPI_LIBS ?= $(or $(shell mpicc --showme:link 2>/dev/null),$(wordlist 2,999,$(shell mpicc -link_info 2>/dev/null)))
  CFLAGS   += -DRL_HAVE_MPI
  LDLIBS   += $(MPI_LIBS)
  $(BUILD)/obj/common/bootstrap_mpi.o: CC := mpicc
endif

# NVTX (v3, header-only, in the toolkit): $(BUILD)/nvtx_probe.so, an NVTX injection that counts
# the ranges a run opens and closes (NVTX_INJECTION64_PATH=...; make test on the emulated GPU,
# make gpu-check on a GPU). In the CUDA_FAKE build the NVTX calls are then real NVTX calls.
# NVTX=0 leaves both out.
NVTX_INC  := $(firstword $(wildcard $(CUDA_HOME)/include/nvtx3/nvToolsExt.h /usr/local/cuda/include/nvtx3/nvToolsExt.h \
               /usr/include/nvtx3/nvToolsExt.h))
NVTX_DIR  := $(patsubst %/nvtx3/,%,$(dir $(NVTX_INC)))
HAVE_NVTX := $(if $(NVTX_INC),1,)
ifeq ($(NVTX),0)
  HAVE_NVTX :=
endif
ifeq ($(HAVE_NVTX),1)
  all: $(BUILD)/nvtx_probe.so
  test-unit: $(BUILD)/nvtx_probe.so
  ifeq ($(CUDA_FAKE),1)
    CFLAGS += -DRL_HAVE_NVTX
    LDLIBS += -ldl
    $(BUILD)/obj/common/cuda_fake/fake_cuda.o: CFLAGS += -I$(NVTX_DIR)
  endif
$(BUILD)/nvtx_probe.so: common/cuda_check/nvtx_probe.c
	@mkdir -p $(dir $@)
	@echo "  CC    $@"
	@$(CC) -std=c11 -D_GNU_SOURCE -g -O2 -Wall -Wextra -Werror -pthread -fPIC -shared -I$(NVTX_DIR) $< -o $@
endif

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	@echo "  NVCC  $<"
	@$(NVCC) $(NVFLAGS) -MMD -MP -c $< -o $@

# make gpu-check's program: GPU kernels against the CPU reference, GEMM TFLOP/s
$(BUILD)/gpu_check: $(BUILD)/obj/common/cuda_check/gpu_check.o $(LIB)
	@echo "  LINK  $@"
	@$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

.PHONY: gpu-check
gpu-check:
	@bash docs/gpu-check.sh
# ================================================================ end of CUDA / NCCL / MPI

# ---------------------------------------------------------------- tests
# The whole suite: the sanitizer build first, then the normal build (its Check summary
# is the last line). Both builds use every core (TEST_JOBS=1 builds one file at a time).
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test: banner
ifneq ($(HAVE_CHECK),1)
	@echo "make test needs Check: run 'make deps' (as root) or: apt-get install -y check" >&2; exit 1
endif
	$(MAKE) --no-print-directory -j$(TEST_JOBS) test-asan
	$(MAKE) --no-print-directory -j$(TEST_JOBS) test-unit

test-unit: $(RINGLAB) $(TESTBIN) $(FUZZ_REPLAY)
	$(MAKE) --no-print-directory BUILD=build/fakegpu CUDA_FAKE=1 MPI=0 TEST_CHILD_ONLY=1 build/fakegpu/ringlab \
	  build/fakegpu/tests/run_tests $(foreach l,$(LAB_NAMES),build/fakegpu/solutions/$(l)/run)
	@echo "== tests ($(BUILD)) =="
	RINGLAB_BUILD=$(BUILD) RINGLAB_FAKEGPU_BUILD=build/fakegpu $(TESTBIN)

# The sanitizer build uses clang when it is there (the normal build is gcc's), so that
# make test builds and runs the project with both compilers.
SAN_CC ?= $(if $(shell command -v clang 2>/dev/null),clang,$(CC))
comma := ,
SAN_FUZZ := $(if $(findstring clang,$(SAN_CC)),$(comma)fuzzer-no-link,)
test-asan:
	@if [ "$(CI)" = true ] && ! command -v clang >/dev/null; then \
	  echo "CI: clang is missing (make deps installs it); the sanitizer build needs it" >&2; exit 1; fi
	$(MAKE) --no-print-directory BUILD=build/asan CC=$(SAN_CC) OPT=-O1 CUDA=0 MPI=0 \
	  SAN="-fsanitize=address,undefined$(SAN_FUZZ) -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  build/asan/ringlab build/asan/tests/run_tests fuzz-bins
	@echo "== tests under AddressSanitizer + UndefinedBehaviorSanitizer ($(SAN_CC)) =="
	ASAN_OPTIONS=detect_leaks=1 RINGLAB_BUILD=build/asan RL_TEST_QUICK=1 build/asan/tests/run_tests

# ================================================================ labs and grading (issue 4)
# Every labs/NN_name/ (README.md, the skeleton, main.c, answers.txt, any support files)
# is built the same way for each variant of its code:
#   build/labs/NN_name/        the learner's code, labs/NN_name/*.c
#   build/solutions/NN_name/   the same files with solutions/NN_name/*.c in their place
#   build/variants/NN_name/copy/       the solution copied over a copy of the skeleton (tests)
#   build/variants/NN_name/bug_NAME/   the solution file with grader/tests/bugs/NN_name/NAME.sed
#                                      applied (planted bugs: the grader must catch each)
#   build/variants/NN_name/ok_NAME/    the solution file with grader/tests/variants/NN_name/NAME.sed
#                                      applied (correct variants: they must score full marks)
# Each variant has `run` (main.c and the lab's files) and, with Check, `grade` (the lab's
# files without main.c + grader/grade.c + grader/gradeNN.c); a bug_ or ok_ variant has only
# `grade` (its one patched file linked with the lab's other objects). Labs drop in unchanged.
LAB_DIRS   := $(patsubst %/main.c,%,$(wildcard labs/[0-9][0-9]_*/main.c))
LAB_NAMES  := $(notdir $(LAB_DIRS))
lab_num     = $(firstword $(subst _, ,$(1)))
lab_srcs    = $(wildcard labs/$(1)/*.c)
lab_files   = $(notdir $(wildcard labs/$(1)/*.c labs/$(1)/*.h labs/$(1)/*.txt))
sol_srcs    = $(wildcard solutions/$(1)/*.c)
lab_grader  = $(wildcard grader/grade$(call lab_num,$(1)).c)
lab_bugs    = $(basename $(notdir $(wildcard grader/tests/bugs/$(1)/*.sed)))
lab_oks     = $(basename $(notdir $(wildcard grader/tests/variants/$(1)/*.sed)))
LAB_RUN_BINS   :=
LAB_GRADE_BINS :=
LAB_PATCHED_BINS :=

# The object check (grader/objcheck.c): before a grader links a lab file, the file is
# preprocessed on its own with these fixed flags (no fortify) and compiled once more (every
# function and object in a section of its own; no stack protector or sanitizer calls, so the
# rules do not depend on the build), and refused, with one line per problem, if it has
# constructors or destructors, globals other than the lab's functions, inline assembly, or
# references the rules in grader/allow/ forbid.
OBJCHECK       := $(BUILD)/objcheck
RESULTS        := $(BUILD)/results
OBJCHECK_FLAGS := -std=c11 -D_GNU_SOURCE -O0 -w -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 -Icommon -Itui
# the preprocessed text is then compiled once, with the build's flags and these, and that one
# object is both what the check reads and what a grade binary links: no optimisation level,
# macro or flag can make the linked code differ from the checked code
OBJCHECK_CC    := -fno-stack-protector -fno-sanitize=all -ffunction-sections -fdata-sections
$(OBJCHECK): $(call obj,grader/objcheck.c grader/rules.c grader/paste.c)
	@mkdir -p $(dir $@)
	@echo "  LINK  $@"
	@$(CC) $(CFLAGS) $^ -o $@

# $(1) lab, $(2) output dir, $(3) the lab file to check, $(4) its include dir: $(2)/objcheck.ok
define LAB_OBJCHECK
$(2)/objcheck.ok: $(3) $(OBJCHECK) grader/allow/common.txt grader/allow/$(1).txt $(wildcard $(4)/*.h) $(FLAGS_STAMP)
	@mkdir -p $$(dir $$@)
	@echo "  CHECK $(3)"
	@$$(CC) $$(OBJCHECK_FLAGS) -I$(4) -E $(3) -o $(2)/objcheck.i
	@$$(CC) $$(filter-out -I%,$$(CFLAGS)) $$(OBJCHECK_CC) -c $(2)/objcheck.i -o $(2)/objcheck.o
	@$(OBJCHECK) --rules grader/allow/common.txt --rules grader/allow/$(1).txt --source $(3) \
	  --preprocessed $(2)/objcheck.i $(2)/objcheck.o
	@touch $$@
# what a grade binary links: the very object the check read
$(BUILD)/obj/$(2)/checked.o: $(2)/objcheck.ok
	@mkdir -p $$(dir $$@)
	@cp $(2)/objcheck.o $$@
endef

# $(1) lab, $(2) output dir, $(3) sources (main.c included)
define LAB_VARIANT
$(2)/run: $(call obj,$(3)) $(TUI_LIB) $(LIB)
	@mkdir -p $$(dir $$@)
	@echo "  LINK  $$@"
	@$$(CC) $$(CFLAGS) $(call obj,$(3)) $$(TUI_LIB) $$(LIB) $$(LDLIBS) $$(NCURSES_LIBS) -o $$@
LAB_RUN_BINS += $(2)/run
ifneq ($(call lab_grader,$(1)),)
$(2)/grade: $(call checked_objs,$(1),$(filter-out %/main.c,$(3)),$(2)) $(TUI_LIB) $(LIB) $(2)/objcheck.ok
	@mkdir -p $$(dir $$@)
	@echo "  LINK  $$@"
	@sh grader/pad.sh $$@.pad.o $$(CC)
	@sh grader/shuffle.sh $$@.shuffle.ld $(call checked_objs,$(1),$(filter-out %/main.c,$(3)),$(2)) $$(TUI_LIB) $$(LIB)
	@$$(CC) $$(CFLAGS) $(call checked_objs,$(1),$(filter-out %/main.c,$(3)),$(2)) $$(TUI_LIB) \
	  $$(LIB) $$(LDLIBS) $$(NCURSES_LIBS) $$(GRADE_LIBS) $$@.pad.o -Wl,-T,$$@.shuffle.ld -o $$@
LAB_GRADE_BINS += $(2)/grade
endif
endef

# The objects of a grade binary of lab $(1) from the lab's sources $(2): the lab file's code moved to
# the section rl_learner_text and closed by grader/learner_end.c (the code under test, which only a
# test's child maps: grade.c), the other files as they are, the grader and its sandbox; linked
# last, a padding of random size made afresh at each link (grader/pad.sh), and every function
# in a random order, also afresh at each link (grader/shuffle.sh; objects are built with
# -ffunction-sections).
learner_of  = $(filter %/$(call lab_file,$(1)),$(2))
grade_rest  = $(call obj,grader/learner_end.c $(filter-out $(call learner_of,$(1),$(2)),$(2)) grader/grade.c grader/answers.c \
  grader/sandbox.c grader/rules.c $(BUILD)/gen/rules-$(1).c $(call lab_grader,$(1)))
grade_objs  = $(patsubst %.o,%.learner.o,$(call obj,$(call learner_of,$(1),$(2)))) $(call grade_rest,$(1),$(2))
# ... and with the lab file as the very object the check read (output dir $(3)): no macro, flag
# or optimisation level of the build's own can add code the check did not see
checked_objs = $(BUILD)/obj/$(3)/checked.learner.o $(call grade_rest,$(1),$(2))
# the lab's rules (grader/allow/), built into its grade binaries: the judge holds what the code under
# test called at run time against them
$(BUILD)/gen/rules-%.c: grader/allow/common.txt grader/allow/%.txt
	@mkdir -p $(dir $@)
	@{ echo '/* made from grader/allow/common.txt and grader/allow/$*.txt by the Makefile */'; \
	  echo 'extern const char rl_grade_rules_text[];'; echo 'const char rl_grade_rules_text[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$$/\\n"/' $^; echo '    ;'; } > $@
$(BUILD)/obj/%.learner.o: $(BUILD)/obj/%.o
	@objcopy $$(objdump -h $< | awk '$$2 ~ /^\.text/ {printf "--rename-section %s=rl_learner_text ", $$2}') $< $@

# $(1) lab: its three kinds of variants
define LAB_RULES
$(BUILD)/obj/labs/$(1)/%.o $(BUILD)/obj/solutions/$(1)/%.o $(BUILD)/obj/$(BUILD)/variants/$(1)/%.o: CFLAGS += -Ilabs/$(1)
$(BUILD)/obj/grader/grade$(call lab_num,$(1)).o: CFLAGS += -Ilabs/$(1) -Igrader
$(eval $(call LAB_VARIANT,$(1),$(BUILD)/labs/$(1),$(call lab_srcs,$(1))))
$(eval $(call LAB_OBJCHECK,$(1),$(BUILD)/labs/$(1),labs/$(1)/$(call lab_file,$(1)),labs/$(1)))
$(if $(call sol_srcs,$(1)),$(eval $(call LAB_WITH_SOLUTION,$(1))))
endef

# $(1) lab: what needs its reference solution (a release has none): solutions/, the copy of the
# solution over the skeleton, planted bugs and correct variants
define LAB_WITH_SOLUTION
$(eval $(call LAB_VARIANT,$(1),$(BUILD)/solutions/$(1),$(filter-out $(addprefix labs/$(1)/,$(notdir $(call sol_srcs,$(1)))),$(call lab_srcs,$(1))) $(call sol_srcs,$(1))))
$(eval $(call LAB_OBJCHECK,$(1),$(BUILD)/solutions/$(1),$(call sol_file,$(1)),labs/$(1)))
$(eval $(call LAB_OBJCHECK,$(1),$(BUILD)/variants/$(1)/copy,$(BUILD)/variants/$(1)/copy/$(notdir $(call sol_file,$(1))),$(BUILD)/variants/$(1)/copy))
$(foreach f,$(call lab_files,$(1)),$(eval $(call LAB_COPY_FILE,$(1),copy,$(f),$(or $(wildcard solutions/$(1)/$(f)),labs/$(1)/$(f)))))
$(eval $(call LAB_VARIANT,$(1),$(BUILD)/variants/$(1)/copy,$(addprefix $(BUILD)/variants/$(1)/copy/,$(notdir $(call lab_srcs,$(1))))))
$(BUILD)/variants/$(1)/copy/grade $(BUILD)/variants/$(1)/copy/run: $(addprefix $(BUILD)/variants/$(1)/copy/,$(call lab_files,$(1)))
$(call obj,$(addprefix $(BUILD)/variants/$(1)/copy/,$(notdir $(call lab_srcs,$(1))))): $(addprefix $(BUILD)/variants/$(1)/copy/,$(notdir $(wildcard labs/$(1)/*.h)))
$(foreach b,$(call lab_bugs,$(1)),$(eval $(call LAB_PATCHED,$(1),bug_$(b),grader/tests/bugs/$(1)/$(b).sed)))
$(foreach b,$(call lab_oks,$(1)),$(eval $(call LAB_PATCHED,$(1),ok_$(b),grader/tests/variants/$(1)/$(b).sed)))
$(foreach b,$(call lab_oks,$(1)),$(eval $(call LAB_OBJCHECK,$(1),$(BUILD)/variants/$(1)/ok_$(b),$(BUILD)/variants/$(1)/ok_$(b)/$(notdir $(call sol_file,$(1))),labs/$(1))))
$(foreach b,$(call lab_oks,$(1)),$(eval $(BUILD)/variants/$(1)/ok_$(b)/grade: $(BUILD)/variants/$(1)/ok_$(b)/objcheck.ok))
endef

# $(1) lab, $(2) variant, $(3) file name, $(4) where it comes from
define LAB_COPY_FILE
$(BUILD)/variants/$(1)/$(2)/$(3): $(4)
	@mkdir -p $$(dir $$@)
	@cp $$< $$@
endef

# $(1) lab, $(2) variant dir name, $(3) the sed script: the solution file patched by it, linked
# with the objects of the lab's other files (as built for labs/NN_name); a correct variant (ok_)
# links the object its check read, as a learner's file does
sol_file    = $(firstword $(call sol_srcs,$(1)))
lab_file    = $(notdir $(firstword $(filter-out %/main.c %_support.c,$(call lab_srcs,$(1)))))
lab_others  = $(filter-out %/main.c labs/$(1)/$(notdir $(call sol_file,$(1))),$(call lab_srcs,$(1)))
patched_srcs = $(BUILD)/variants/$(1)/$(2)/$(notdir $(call sol_file,$(1))) $(call lab_others,$(1))
define LAB_PATCHED
$(BUILD)/variants/$(1)/$(2)/$(notdir $(call sol_file,$(1))): $(call sol_file,$(1)) $(3)
	@mkdir -p $$(dir $$@)
	@echo "  SED   $(3) -> $$@"
	@sed -f $(3) $$< > $$@.tmp
	@if cmp -s $$< $$@.tmp; then echo "$(3) changed nothing in $$<" >&2; rm -f $$@.tmp; exit 1; fi
	@mv $$@.tmp $$@
$(BUILD)/variants/$(1)/$(2)/grade: $(if $(filter ok_%,$(2)),$(call checked_objs,$(1),$(call patched_srcs,$(1),$(2)),$(BUILD)/variants/$(1)/$(2)),$(call \
  grade_objs,$(1),$(call patched_srcs,$(1),$(2)))) $(TUI_LIB) $(LIB)
	@echo "  LINK  $$@"
	@sh grader/pad.sh $$@.pad.o $$(CC)
	@sh grader/shuffle.sh $$@.shuffle.ld $$(filter %.o,$$^) $$(TUI_LIB) $$(LIB)
	@$$(CC) $$(CFLAGS) $$(filter %.o,$$^) $$(TUI_LIB) $$(LIB) $$(LDLIBS) $$(NCURSES_LIBS) $$(GRADE_LIBS) $$@.pad.o \
	  -Wl,-T,$$@.shuffle.ld -o $$@
LAB_PATCHED_BINS += $(BUILD)/variants/$(1)/$(2)/grade
endef

$(foreach l,$(LAB_NAMES),$(eval $(call LAB_RULES,$(l))))
$(BUILD)/obj/grader/tests/%.o: CFLAGS += -Icommon/tests

# `make` builds every lab's run (and, with Check, grade) binaries; the test binary needs the
# graders (grader/tests run them), so test-unit and test-asan build them too — the planted
# bugs and correct variants only in the normal build (the sanitizer run does not grade them).
all: $(LAB_RUN_BINS) $(if $(GRADING),$(LAB_GRADE_BINS) $(LAB_PATCHED_BINS),)
# (TEST_CHILD_ONLY=1: the emulated-GPU build's test binary, run only as a child program by
# the normal build's tests, needs none of them)
$(TESTBIN): | $(if $(TEST_CHILD_ONLY),,$(OBJCHECK) $(RESULTS) $(LAB_RUN_BINS) $(LAB_GRADE_BINS) $(if $(SAN),,$(LAB_PATCHED_BINS)))

# make run LAB=28 [RANKS=4] [SOLUTION=1] [ARGS="--hw a100-pcie --trace run.json"]
# make grade [LAB=28] [STEP=28.1] [SOLUTION=1] [EXAM=1] [JSON=results.json | JSON=dir/]
LAB         ?= $(firstword $(subst ., ,$(STEP)))
SOLUTION    ?= 0
LAB_KIND     = $(if $(filter-out 0,$(SOLUTION)),solutions,labs)
LAB_SEL      = $(if $(LAB),$(notdir $(patsubst %/main.c,%,$(wildcard labs/$(LAB)_*/main.c labs/$(LAB)/main.c))),$(LAB_NAMES))
.PHONY: run grade
run: $(if $(LAB),$(foreach l,$(LAB_SEL),$(BUILD)/$(LAB_KIND)/$(l)/run),)
	@if [ -z "$(LAB)" ] || [ -z "$(LAB_SEL)" ]; then \
	  echo "make run needs LAB=NN, one of: $(LAB_NAMES) (e.g. make run LAB=28 RANKS=4)" >&2; exit 2; fi
	@echo "== lab $(LAB_SEL): $(if $(filter solutions,$(LAB_KIND)),reference solution solutions,your code labs)/$(LAB_SEL) =="
	@$(BUILD)/$(LAB_KIND)/$(LAB_SEL)/run $(if $(RANKS),--ranks $(RANKS),) $(ARGS)

# make hint LAB=28 STEP=28.1: the step's next hint (labs/NN_name/hints.md, one rung at a time: the
# idea, the structure, the traps, near-code), recorded in labs/NN_name/hints-used.txt, which
# make clean keeps and the learner submits; ALL=1 shows again the ones seen; no STEP: a summary.
.PHONY: hint
hint: $(RINGLAB)
	@if [ -z "$(LAB)" ] || [ -z "$(LAB_SEL)" ]; then \
	  echo "make hint needs LAB=NN and STEP=NN.M, e.g. make hint LAB=28 STEP=28.1 (labs: $(LAB_NAMES))" >&2; exit 2; fi
	@$(RINGLAB) hint labs/$(LAB_SEL) $(STEP) $(if $(filter-out 0,$(ALL)),--all,)

# make learner ID=you@uni.edu: who these answers are from — the line `learner = ID` in every lab's
# answers.txt (submitted with it). The hand derivations ask about numbers of each learner's own,
# made from the id; make questions LAB=29 prints them (the lab's grade binary: --questions).
.PHONY: learner questions
learner:
	@if ! printf '%s' "$(ID)" | grep -Eq '^[A-Za-z0-9][A-Za-z0-9._%+@-]{0,99}$$'; then \
	  echo "make learner needs ID=<your course email or student id> (a letter or digit, then letters, digits and . _ % + @ - only; 100 at most), e.g. make learner ID=ada@uni.edu" >&2; exit 2; fi
	@for f in labs/*/answers.txt; do \
	  if grep -q '^learner *=' $$f; then sed -i 's/^learner *=.*/learner = $(ID)/' $$f; else printf 'learner = %s\n' "$(ID)" >> $$f; fi; \
	done
	@echo "learner = $(ID) in $$(ls labs/*/answers.txt | wc -l) answers files; make questions LAB=NN prints your numbers"
questions: $(if $(GRADING),$(foreach l,$(LAB_SEL),$(BUILD)/$(LAB_KIND)/$(l)/grade),)
	@if [ -z "$(LAB)" ] || [ -z "$(LAB_SEL)" ]; then \
	  echo "make questions needs LAB=NN, one of: $(LAB_NAMES) (e.g. make questions LAB=29)" >&2; exit 2; fi
	@$(BUILD)/$(LAB_KIND)/$(LAB_SEL)/grade --questions --answers $(LAB_KIND)/$(LAB_SEL)/answers.txt

# The score comes from the results files the graders write (grader/results.c reads them),
# never from their printed output: a lab's code may print anything.
$(RESULTS): $(call obj,grader/results.c)
	@mkdir -p $(dir $@)
	@echo "  LINK  $@"
	@$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@
# (make grade builds the lab's run too, so that make run after it runs the code just graded; it
# records each step's grade of your labs in build/progress/ for make progress)
grade: $(if $(GRADING),$(foreach l,$(LAB_SEL),$(BUILD)/$(LAB_KIND)/$(l)/grade $(BUILD)/$(LAB_KIND)/$(l)/run) $(RESULTS) \
  $(RINGLAB),)
ifneq ($(GRADING),1)
	@echo "grading needs Check and libseccomp: run 'make deps' (as root) or: apt-get install -y check libseccomp-dev" >&2; exit 1
endif
	@if [ -z "$(LAB_SEL)" ]; then echo "no lab matches LAB=$(LAB); labs: $(LAB_NAMES)" >&2; exit 2; fi
	@set -o pipefail; fail=0; files=""; \
	$(if $(filter %/,$(JSON)),mkdir -p $(JSON);) \
	for l in $(LAB_SEL); do \
	  echo "== grading lab $$l: $(if $(filter solutions,$(LAB_KIND)),the reference solution (solutions/$$l),your code (labs/$$l)) =="; \
	  rm -f $(BUILD)/results-$$l.json; files_graded=$(if $(filter labs,$(LAB_KIND)),$$($(RINGLAB) progress --files-of labs/$$l),); \
	  $(BUILD)/$(LAB_KIND)/$$l/grade --answers $(LAB_KIND)/$$l/answers.txt $(if $(STEP),--step $(STEP),) \
	    $(if $(filter labs,$(LAB_KIND)),--hints labs/$$l/hints-used.txt $(if $(HINT_PENALTY),--hint-penalty $(HINT_PENALTY),),) \
	    $(if $(filter-out 0,$(EXAM)),--exam,) --details $(BUILD)/grade-$$l.details.txt --json $(BUILD)/results-$$l.json \
	    | tee $(BUILD)/grade-$$l.log || { rc=$$?; [ $$rc = 2 ] && exit 2; fail=1; }; \
	  $(if $(filter labs,$(LAB_KIND)),[ ! -s $(BUILD)/results-$$l.json ] || $(RINGLAB) progress --record labs/$$l \
	    $(BUILD)/results-$$l.json --files "$$files_graded" --dir $(BUILD)/progress || fail=1;) \
	  files="$$files $$l=$(BUILD)/results-$$l.json"; \
	done; \
	$(RESULTS) $(if $(filter %/,$(JSON)),--dir $(JSON),$(if $(JSON),--out $(JSON),)) $$files && [ $$fail = 0 ]
# make progress: every lab and step — its last grade, the hints shown, stale when the lab's files
# changed since — and the next thing to do. make watch LAB=28 [STEP=28.1]: regrades each time a
# file of the lab is saved (checked every second) and shows the step on one screen; Ctrl-C stops
# (WATCH_ROUNDS=N: after N grades).
.PHONY: progress watch
progress: $(RINGLAB)
	@if [ -n "$(LAB)" ] && [ -z "$(LAB_SEL)" ]; then echo "no lab matches LAB=$(LAB); labs: $(LAB_NAMES)" >&2; exit 2; fi
	@$(RINGLAB) progress --dir $(BUILD)/progress $(if $(LAB),$(addprefix labs/,$(LAB_SEL)),) $(if $(STEP),--step $(STEP),)
watch: $(RINGLAB)
	@if [ -z "$(LAB)" ] || [ -z "$(LAB_SEL)" ]; then \
	  echo "make watch needs LAB=NN [STEP=NN.M], e.g. make watch LAB=28 STEP=28.1 (labs: $(LAB_NAMES))" >&2; exit 2; fi
	@$(if $(STEP),$(RINGLAB) progress --dir $(BUILD)/progress labs/$(LAB_SEL) --step $(STEP) > /dev/null,true)
	@last=""; rounds=0; while :; do \
	  now=$$($(RINGLAB) progress --files-of labs/$(LAB_SEL)); \
	  if [ "$$now" != "$$last" ]; then \
	    last=$$now; \
	    $(MAKE) --no-print-directory grade LAB=$(LAB) $(if $(STEP),STEP=$(STEP),) > $(BUILD)/watch.log 2>&1; \
	    if [ -t 1 ]; then clear; fi; \
	    echo "make watch LAB=$(LAB)$(if $(STEP), STEP=$(STEP),) — graded at $$(date +%H:%M:%S)"; \
	    if ! grep -q '^== grading lab' $(BUILD)/watch.log; then \
	      echo "The build failed (the grade did not run):"; grep -m 12 -E 'error|warning' $(BUILD)/watch.log; fi; \
	    $(RINGLAB) progress --dir $(BUILD)/progress labs/$(LAB_SEL) $(if $(STEP),--step $(STEP),); \
	    rounds=$$((rounds + 1)); \
	    if [ -n "$(WATCH_ROUNDS)" ] && [ $$rounds -ge $(WATCH_ROUNDS) ]; then \
	      echo "(the whole grade: $(BUILD)/watch.log) $$rounds grades: WATCH_ROUNDS reached"; break; fi; \
	    echo "(the whole grade: $(BUILD)/watch.log) waiting for a save of labs/$(LAB_SEL); Ctrl-C stops"; \
	  fi; \
	  sleep 1; \
	done

# make release: the learners' tarball, build/ringlab-labs.tar.gz — the tracked files without the
# reference solutions, the interview questions' keys (grader/keys/: the autograder has them), the planted bugs, the correct variants, the attacks and the tests that
# need them, with docs/release/README.md as its README. It builds, runs every lab and grades 0.
RELEASE_DIR  := $(BUILD)/release/ringlab-labs
RELEASE_SKIP := ^(solutions/|grader/keys/|grader/tests/(bugs|variants|attacks)/|grader/tests/test_(graders|objcheck|release|docs)\.c$$|\.ci/|docs/release/)
.PHONY: release
release:
	@git rev-parse --git-dir >/dev/null 2>&1 || { echo "make release needs a git checkout (it ships the tracked files)" >&2; exit 2; }
	@rm -rf $(BUILD)/release && mkdir -p $(RELEASE_DIR)
	@git ls-files | grep -Ev '$(RELEASE_SKIP)' | tar -cf - -T - | tar -xf - -C $(RELEASE_DIR)
	@cp docs/release/README.md $(RELEASE_DIR)/README.md
	@git rev-parse HEAD > $(RELEASE_DIR)/VERSION
	@tar -czf $(BUILD)/ringlab-labs.tar.gz -C $(BUILD)/release ringlab-labs
	@echo "  RELEASE $(BUILD)/ringlab-labs.tar.gz ($$(tar -tzf $(BUILD)/ringlab-labs.tar.gz | wc -l) entries, commit $$(cut -c1-12 $(RELEASE_DIR)/VERSION))"

# make autograder [LAB=28]: Gradescope autograders in build/autograder/ — one zip per lab
# (ringlab-autograder-28_ddp.zip ...; assignments open on different dates) and one for the whole
# course (ringlab-autograder-all.zip), or only LAB's. Each holds the release tree (ringlab/) with the
# interview questions' keys (grader/keys/),
# setup.sh (packages, and everything built but the learner's objects), run_autograder (one
# submission, in exam mode, as nobody: grader/autograder/run_autograder), calibrate.sh and
# autograder.conf (the labs, the calibration time of this machine, and HINT_PENALTY: points off a
# step per hint the learner was shown, 0 unless make autograder HINT_PENALTY=P).
AUTOGRADER_DIR := $(BUILD)/autograder
AG_RINGLAB     ?= $(RINGLAB)
.PHONY: autograder
autograder: release $(AG_RINGLAB)
	@command -v zip >/dev/null || { echo "make autograder needs zip: run 'make deps' (as root) or: apt-get install -y zip" >&2; exit 1; }
	@rm -rf $(AUTOGRADER_DIR) && mkdir -p $(AUTOGRADER_DIR)
	@calib=$$(bash grader/autograder/calibrate.sh $(AG_RINGLAB)); \
	for set in $(if $(LAB),$(LAB_SEL),$(LAB_NAMES) all); do \
	  stage=$(AUTOGRADER_DIR)/$$set; mkdir -p $$stage; \
	  cp -a $(RELEASE_DIR) $$stage/ringlab && cp -a grader/keys $$stage/ringlab/grader/keys; \
	  cp grader/autograder/setup.sh grader/autograder/run_autograder grader/autograder/calibrate.sh $$stage/; \
	  printf 'LABS="%s"\nCALIBRATION_S=%s\nHINT_PENALTY=%s\n' "$$([ $$set = all ] && echo $(LAB_NAMES) || echo $$set)" \
	    "$$calib" "$(or $(HINT_PENALTY),0)" \
	    > $$stage/autograder.conf; \
	  (cd $$stage && zip -qr ../ringlab-autograder-$$set.zip .) && rm -rf $$stage; \
	  echo "  AUTOGRADER $(AUTOGRADER_DIR)/ringlab-autograder-$$set.zip (calibration $$calib s)"; \
	done

# ================================================================ end of labs and grading

help:
	@echo "ringlab — make targets:"
	@echo "  make              build everything this machine can (prints a ✓/✗ banner)"
	@echo "  make deps         install the Debian packages the build and tests need (as root)"
	@echo "  make run LAB=28 [RANKS=4] [ARGS=\"--hw a100-pcie --trace run.json\"]   build and run your lab 28"
	@echo "  make run LAB=28 SOLUTION=1   the same with the reference solution"
	@echo "  make grade [LAB=28] [STEP=28.1] [SOLUTION=1] [EXAM=1] [JSON=results.json or JSON=dir/] [HINT_PENALTY=P]   grade your labs (or the solutions)"
	@echo "  make hint LAB=28 STEP=28.1 [ALL=1]   the step's next hint, one rung at a time (recorded in labs/NN/hints-used.txt)"
	@echo "  make progress     every lab and step: last grade, hints shown, stale or not, what to do next"
	@echo "  make watch LAB=28 [STEP=28.1]   regrade each time you save the lab, on one screen"
	@echo "  make learner ID=you@uni.edu         who your answers are from: your hand-derivation numbers come from it"
	@echo "  make questions LAB=29                your numbers for the lab's hand derivations, and the interview options with your letters"
	@echo "  make test         the whole test suite (sanitizer build, then normal build)"
	@echo "  make release      the learners' tarball (no solutions, planted bugs or their tests): build/ringlab-labs.tar.gz"
	@echo "  make autograder [LAB=28]   Gradescope autograder zips (one per lab, one for the course): build/autograder/"
	@echo "  make test-asan    the test suite under AddressSanitizer + UBSan only (clang's build, with the fuzz smoke)"
	@echo "  make fuzz [FUZZ=trace] [FUZZ_SECONDS=600]   libFuzzer on the trace reader, flight dumps, answers, options"
	@echo "  make gpu-check    on a GPU machine: build, check ops/collectives on the GPU, print a table"
	@echo "  make view TRACE=run.json   replay a trace in the terminal UI (build/ringlab view FILE)"
	@echo "  make clean        remove build/"
	@echo "Tools (each with --help):"
	@echo "  build/ringlab bench COLLECTIVE|gemm   nccl-tests-style tables (modelled and wall time), GEMM GFLOP/s"
	@echo "  build/ringlab calc TOPIC              cost calculators (zero, allreduce, tp, activation, bubble, flops, moe, plan)"
	@echo "  build/ringlab train --model M         one-rank training of mlp, transformer or moe"
	@echo "  build/ringlab view FILE               the terminal UI on a trace (--render VIEW for text, --ticks for the pipeline tick"
	@echo "                                        table, --narrate --at TIME for what runs at TIME)"

# Replays a trace in the TUI (keys 1-5 views, ? help, q quit).
view: $(RINGLAB)
	@test -n "$(TRACE)" || { echo "usage: make view TRACE=run.json   (a trace written by a run with --trace FILE)" >&2; exit 2; }
	$(RINGLAB) view $(TRACE)

clean:
	rm -rf $(BUILD) build

# The flags every object is built with, fixed here once the build's settings are all known (a
# target's own additions, such as a lab's -Ilabs/NN, are not in it: switching targets rebuilds nothing).
STAMP_FLAGS := $(CC) $(CFLAGS) $(SAN)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
