#include "visualizer/chart_style.h"

#include <QtCharts/QAbstractAxis>
#include <QtCharts/QLegend>

namespace pd::vis {

void apply_chart_style(QChart& c, const TimelinePalette& pal) {
    c.setBackgroundBrush(pal.background);
    c.setPlotAreaBackgroundVisible(false);
    c.setTitleBrush(pal.text);
    QFont title = c.titleFont();
    title.setPixelSize(13);
    title.setBold(true);
    c.setTitleFont(title);
    c.legend()->setLabelColor(pal.text);
    QFont legend_font = c.legend()->font();
    legend_font.setPixelSize(11);
    c.legend()->setFont(legend_font);
    for (QAbstractAxis* a : c.axes()) {
        a->setLabelsBrush(pal.text);
        a->setTitleBrush(pal.muted);
        a->setLinePenColor(pal.grid);
        a->setGridLineColor(pal.grid);
        QFont f = a->labelsFont();
        f.setPixelSize(11);
        a->setLabelsFont(f);
        QFont tf = a->titleFont();
        tf.setPixelSize(11);
        tf.setBold(false);
        a->setTitleFont(tf);
    }
}

}  // namespace pd::vis
