export PATH=/usr/local/cuda/bin:$PATH; R=$PWD/.deps/sysroot/usr; export LD_LIBRARY_PATH=$R/lib/x86_64-linux-gnu
S=$SECONDS
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$R -DCMAKE_INCLUDE_PATH=$R/include >$OUT/cfg.log 2>&1 || cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=$R -DCMAKE_INCLUDE_PATH=$R/include >>$OUT/cfg.log 2>&1
cmake --build build-gpu -j32 >$OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
echo "built at $((SECONDS-S)) s"
build-gpu/tests/contract_fuzz/contract_fuzz --soak 8 >$OUT/soak.log 2>&1 &
SOAK=$!
(TRTET_SANITIZE_TIMEOUT=380 TRTET_SANITIZE_JOBS=12 timeout 480 scripts/gpu-sanitize build-gpu >$OUT/sanitize.log 2>&1; echo "sanitize rc $?" >>$OUT/sanitize.log) &
SAN=$!
(TRTET_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=$R" timeout 300 nice -n 10 scripts/gpu-tensorrt >$OUT/trt.log 2>&1; echo "trt rc $?" >>$OUT/trt.log) &
TRT=$!
wait $TRT; tail -3 $OUT/trt.log
wait $SAN; tail -8 $OUT/sanitize.log
wait $SOAK; echo "soak rc $? at $((SECONDS-S)) s"; grep -E "FAIL|summary" $OUT/soak.log | tail -5
mkdir -p $OUT/sanlogs; for f in build-gpu/sanitize/*.log; do grep -qE "ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]|FAILED" $f && cp $f $OUT/sanlogs/; done; true
