# LTO inlines a foreign call: link an LTO-IR caller and an LTO-IR foreign function with
# `fdlink link --emit-ptx`, then the post-LTO PTX must hold the kernel and no call at all, not
# even the foreign function's name, and the cubin no function of that name.
# Variables: EXE (fdlink), DIR (the fixtures), OUT (a scratch folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
execute_process(COMMAND "${EXE}" link -arch=sm_90 --emit-ptx=${OUT}/post.ptx -o ${OUT}/app.cubin
                        caller.ltoir mul.ltoir
  WORKING_DIRECTORY "${DIR}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fdlink link failed (${rc}): ${err}")
endif()
file(READ "${OUT}/post.ptx" ptx)
if(NOT ptx MATCHES "\\.visible \\.entry multiply_vectors")
  message(FATAL_ERROR "the post-LTO PTX lacks the kernel:\n${ptx}")
endif()
if(ptx MATCHES "call" OR ptx MATCHES "mul_f32_f32")
  message(FATAL_ERROR "the foreign call was not inlined:\n${ptx}")
endif()
execute_process(COMMAND "${EXE}" inspect ${OUT}/app.cubin OUTPUT_VARIABLE shown RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT shown MATCHES "kernel +multiply_vectors" OR shown MATCHES "mul_f32_f32")
  message(FATAL_ERROR "the linked cubin is not what LTO should make:\n${shown}")
endif()
message(STATUS "inlined: the post-LTO PTX holds no call")
