func.func @f(%a: i32, %b: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %two = arith.constant 2 : i32
  %c = arith.addi %a, %zero : i32
  %d = arith.addi %c, %b : i32
  %e = arith.muli %d, %one : i32
  %f = arith.muli %e, %two : i32
  %g = arith.addi %f, %two : i32
  func.return %g : i32
}
