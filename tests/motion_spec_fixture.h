/* The motion specification the tests share: the right arm's distance tube driving the base of
 * the mobile_manipulator (the dual-arm alignment tutorial's scenario 1, its distance part),
 * minimal and valid. A string literal, so a test can take its address or its length. */
#ifndef RS_TEST_MOTION_SPEC_FIXTURE_H
#define RS_TEST_MOTION_SPEC_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#define RS_TEST_BASE_SPEC \
    "{\"@context\": {\"rs\": \"https://robosim.example/motion#\", \"qk\": \"rs:quantity-kind\"},\n" \
    " \"@graph\": [\n"                                                                          \
    " {\"@id\": \"fw\", \"@type\": \"Frame\", \"world-frame\": \"world\"},\n"                   \
    " {\"@id\": \"fs\", \"@type\": \"Frame\", \"world-frame\": \"right_shoulder\"},\n"          \
    " {\"@id\": \"fe\", \"@type\": \"Frame\", \"world-frame\": \"right_ee\"},\n"                \
    " {\"@id\": \"fb\", \"@type\": \"Frame\", \"world-frame\": \"base\"},\n"                    \
    " {\"@id\": \"pose\", \"@type\": [\"Pose\"], \"of\": \"fe\", \"with-respect-to\": \"fs\", " \
    "\"as-seen-by\": \"fb\"},\n"                                                                \
    " {\"@id\": \"dist\", \"@type\": [\"Quantity\", \"Distance\"], \"qk\": \"Distance\", \"unit\": " \
    "\"M\"},\n"                                                                                 \
    " {\"@id\": \"op-dist\", \"@type\": \"PoseToLinearDistance\", \"pose\": \"pose\", \"distance\": " \
    "\"dist\"},\n"                                                                              \
    " {\"@id\": \"lo\", \"@type\": [\"Quantity\", \"Distance\"], \"unit\": \"M\", \"value\": "  \
    "\"0.68\"},\n"                                                                              \
    " {\"@id\": \"hi\", \"@type\": [\"Quantity\", \"Distance\"], \"unit\": \"M\", \"value\": "  \
    "\"0.72\"},\n"                                                                              \
    " {\"@id\": \"cstr\", \"@type\": [\"Constraint\", \"BilateralConstraint\", "                \
    "\"LinearDistanceConstraint\"], \"quantity\": \"dist\", \"lower-threshold\": \"lo\", "      \
    "\"upper-threshold\": \"hi\"},\n"                                                           \
    " {\"@id\": \"err\", \"@type\": [\"Quantity\", \"Distance\"], \"quantity-kind\": \"Distance\", " \
    "\"unit\": \"M\"},\n"                                                                       \
    " {\"@id\": \"ev\", \"@type\": \"ErrorEvaluator\", \"constraint\": \"cstr\", \"error\": "   \
    "\"err\"},\n"                                                                               \
    " {\"@id\": \"f\", \"@type\": [\"Quantity\", \"Force\"], \"unit\": \"N\"},\n"               \
    " {\"@id\": \"ctl\", \"@type\": [\"Controller\", \"ProportionalIntegralDerivative\", "      \
    "\"DecayingIntegralTerm\"], \"error-signal\": \"err\", \"control-signal\": \"f\", "         \
    "\"proportional-gain\": \"450.0\", \"integral-gain\": \"65.5\", \"derivative-gain\": \"80.0\", " \
    "\"decay-rate\": \"0.99\"},\n"                                                              \
    " {\"@id\": \"hdl\", \"@type\": \"ConstraintHandler\", \"constraint\": \"cstr\", "          \
    "\"controller\": \"ctl\"},\n"                                                               \
    " {\"@id\": \"dir\", \"@type\": [\"Direction\"], \"quantity-kind\": \"Dimensionless\", "    \
    "\"unit\": \"UNITLESS\"},\n"                                                                \
    " {\"@id\": \"op-dir\", \"@type\": \"PoseToDirection\", \"pose\": \"pose\", \"direction\": " \
    "\"dir\"},\n"                                                                               \
    " {\"@id\": \"w\", \"@type\": [\"Wrench\"]},\n"                                             \
    " {\"@id\": \"op-w\", \"@type\": \"PureForceFromDirectionAndMagnitude\", \"magnitude\": \"f\", " \
    "\"direction\": \"dir\", \"wrench\": \"w\"},\n"                                             \
    " {\"@id\": \"drv\", \"@type\": \"MotionDriver\", \"wrench\": \"w\", \"attached-to\": \"fb\"},\n" \
    " {\"@id\": \"prio\", \"@type\": \"PrioritizationLevel\", \"motion-drivers\": [\"drv\"]},\n" \
    " {\"@id\": \"slv\", \"@type\": \"SolverWithInputAndOutput\", \"motion-drivers\": "         \
    "[\"prio\"], \"solver\": \"JacobianTranspose\"}\n"                                          \
    " ]}\n"

/* RS_TEST_BASE_SPEC padded with blanks to about 1 MB (the size the tests load and checkpoint),
 * malloc'd; NULL when out of memory. */
static inline char *rs_test_big_spec(void)
{
    size_t n = strlen(RS_TEST_BASE_SPEC), total = 1000000;
    char *doc = malloc(total + 1);
    if (!doc)
        return NULL;
    memcpy(doc, RS_TEST_BASE_SPEC, n);
    memset(doc + n, ' ', total - n);
    doc[total] = '\0';
    return doc;
}

#endif
