// RUN: glow-opt --disable-verify %s -p lower-glowll-to-llvm -t llvm | filecheck %s
// A HardSwish table (input 0.045:-60, output 0.035:-117, entries rint(y / 0.035) - 117) on
// the AVX2 byte-shuffle kernel: its int16 form is proved on all 256 levels
// (table_arithmetic.hard_swish_form: shift 2, slope 10111, ramp 10006, top 10530), so each
// 32 levels are computed, not looked up: two word halves (the level in each word's high
// byte), each min(max(mulhrs(w, slope) + ramp, 0), top) times (w >> 6) - (-60 << 2) by
// vpmulhrsw, plus the output zero point, then one saturating pack; no vpshufb.
// (--disable-verify: xDSL's llvm.select takes no vector condition; LLVM does.)

glowll.function @net attributes {constant_size = 256 : i64, mutable_size = 448 : i64, activations_size = 0 : i64} {
  %x = glowll.placeholder input "x" {offset = 0 : i64} : memref<2x100x!quant.uniform<i8:f32, 4.5e-02:-60>>
  %y = glowll.placeholder output "y" {offset = 256 : i64} : memref<2x100x!quant.uniform<i8:f32, 3.5e-02:-117>>
  %t = glowll.weight "t" {value = dense<[-117, -117, -117, -118, -119, -119, -120, -120, -121, -121, -122, -122, -123, -123, -124, -124, -124, -125, -125, -125, -126, -126, -126, -126, -127, -127, -127, -127, -127, -127, -128, -128, -128, -128, -128, -128, -128, -128, -128, -128, -127, -127, -127, -127, -127, -127, -126, -126, -126, -126, -125, -125, -125, -124, -124, -124, -123, -123, -122, -122, -122, -121, -121, -120, -119, -119, -118, -118, -117, -116, -116, -115, -114, -114, -113, -112, -111, -110, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -91, -90, -89, -88, -87, -85, -84, -83, -81, -80, -79, -77, -76, -74, -73, -72, -70, -69, -67, -65, -64, -62, -61, -59, -57, -56, -54, -52, -51, -49, -47, -46, -44, -42, -40, -38, -36, -34, -33, -31, -30, -28, -27, -26, -24, -23, -22, -21, -19, -18, -17, -15, -14, -13, -12, -10, -9, -8, -6, -5, -4, -3, -1, 0, 1, 3, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15, 17, 18, 19, 21, 22, 23, 24, 26, 27, 28, 30, 31, 32, 33, 35, 36, 37, 39, 40, 41, 42, 44, 45, 46, 48, 49, 50, 51, 53, 54, 55, 57, 58, 59, 60, 62, 63, 64, 66, 67, 68, 69, 71, 72, 73, 75, 76, 77, 78, 80, 81, 82, 84, 85, 86, 87, 89, 90, 91, 93, 94, 95, 96, 98, 99, 100, 102, 103, 104, 105, 107, 108, 109, 111, 112, 113, 114, 116, 117, 118, 120, 121, 122, 123]> : tensor<256xi8>, offset = 0 : i64} : memref<256x!quant.uniform<i8:f32, 3.5e-02:-117>>
  glowll.int_lookup_table %y, %x, %t {microkernel = #glowll.microkernel<"vector-lookup-int8", {shuffles = "avx2"}>} : memref<2x100x!quant.uniform<i8:f32, 3.5e-02:-117>>, memref<2x100x!quant.uniform<i8:f32, 4.5e-02:-60>>, memref<256x!quant.uniform<i8:f32, 3.5e-02:-117>>
}

// CHECK-LABEL: define void @"net_0_int_lookup_table"
// CHECK-NOT:   pshuf.b
// CHECK:       %[[LEVELS:.+]] = load <32 x i8>
// CHECK:       shufflevector <32 x i8> %[[LEVELS]], <32 x i8> %{{.+}}, <32 x i32> <i32 32, i32 0, i32 32, i32 1,
// CHECK:       %[[WORDS:.+]] = bitcast <32 x i8> %{{.+}} to <16 x i16>
// CHECK:       i16 10111
// CHECK:       %[[SCALED:.+]] = call <16 x i16> @"llvm.x86.avx2.pmul.hr.sw"(<16 x i16> %[[WORDS]]
// CHECK:       i16 10006
// CHECK:       %[[RAMP:.+]] = add <16 x i16> %[[SCALED]]
// CHECK:       i16 10530
// CHECK:       icmp sgt <16 x i16> %[[RAMP]]
// CHECK:       icmp slt <16 x i16>
// CHECK:       %[[CLAMPED:.+]] = select <16 x i1>
// CHECK:       i16 6,
// CHECK:       ashr <16 x i16> %[[WORDS]]
// CHECK:       i16 -240,
// CHECK:       %[[LEVEL:.+]] = sub <16 x i16>
// CHECK:       %[[PRODUCT:.+]] = call <16 x i16> @"llvm.x86.avx2.pmul.hr.sw"(<16 x i16> %[[LEVEL]], <16 x i16> %[[CLAMPED]])
// CHECK:       i16 -117,
// CHECK:       %[[LOW:.+]] = add <16 x i16> %[[PRODUCT]]
// CHECK:       <32 x i32> <i32 32, i32 8, i32 32, i32 9,
// CHECK:       call <16 x i16> @"llvm.x86.avx2.pmul.hr.sw"
// CHECK:       call <16 x i16> @"llvm.x86.avx2.pmul.hr.sw"
// CHECK:       call <32 x i8> @"llvm.x86.avx2.packsswb"(<16 x i16> %[[LOW]], <16 x i16> %{{.+}})
// CHECK-NOT:   pshuf.b
