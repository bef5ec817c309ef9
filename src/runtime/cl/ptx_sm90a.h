// Hopper's warpgroup instructions (wgmma.*, PTX target sm_90a) from OpenCL C. NVIDIA's OpenCL
// compiles for sm_90, where they do not assemble, and returns the kernel's PTX as the program
// binary. A kernel that needs them writes each one as a PTX comment inside inline asm,
//   __asm volatile("// sm_90a: wgmma.fence.sync.aligned;" ::: "memory"),
// whose operands the compiler substitutes and whose registers it allocates as for any asm
// statement; the runtime then rebuilds the program from its PTX with the comments made
// instructions and the target raised to sm_90a (clCreateProgramWithBinary assembles it).
#pragma once

#include <optional>
#include <string>

namespace texel::cl {

// The marker that opens each hidden instruction.
inline constexpr const char* kSm90aMarker = "// sm_90a: ";

// Whether a kernel source asks for the rebuild.
bool NeedsSm90a(const std::string& source);

// ptx with every marker removed (its instruction made live) and `.target sm_90` raised to
// sm_90a; nullopt when ptx has no `.target sm_90` line (another device, or not PTX).
std::optional<std::string> ActivateSm90a(std::string ptx);

}  // namespace texel::cl
