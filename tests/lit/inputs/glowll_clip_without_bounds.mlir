glowll.function @net {
  %x = glowll.placeholder input "x" : memref<4xf32>
  %y = glowll.placeholder output "y" : memref<4xf32>
  glowll.elementwise %y, %x {kind = "clip"} : memref<4xf32>, memref<4xf32>
}
